#include "vit/model.h"

#include <pln/pln.h>

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pln::exp::vit {

namespace {

void check_kind(const std::string& kind, const std::string& where) {
  if (kind != "ln" && kind != "pln" && kind != "pls" && kind != "none") {
    throw std::invalid_argument(fmt::format("vit: {} must be ln, pln, pls or none, got '{}'", where, kind));
  }
}

void check_norm(const NormChoice& choice, int64_t width, const std::string& site) {
  check_kind(choice.kind, site + " norm");
  if (choice.kind != "pln" && choice.kind != "pls") return;
  if (choice.group < 1 || width % choice.group != 0) {
    throw std::invalid_argument(fmt::format("vit: group {} of the {} norm ({}) must divide the width {}",
                                            choice.group, site, choice.kind, width));
  }
}

// N(0, std^2) clamped to +-2 std: close to the truncated normal ViTs are commonly initialised with.
void truncated_normal_(torch::Tensor& t, double std) {
  torch::NoGradGuard no_grad;
  t.normal_(0.0, std).clamp_(-2.0 * std, 2.0 * std);
}

torch::nn::AnyModule make_activation(const std::string& act) {
  if (act == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (act == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (act == "silu") return torch::nn::AnyModule(torch::nn::SiLU());
  if (act == "sat") {
    return torch::nn::AnyModule(torch::nn::Functional([](const torch::Tensor& x) { return x * torch::rsqrt(1 + x * x); }));
  }
  return torch::nn::AnyModule(torch::nn::Identity());
}

}  // namespace

NormSites parse_norm_sites(const std::string& norm, int64_t group, const std::string& sites) {
  check_kind(norm, "norm");
  NormSites out{{norm, group}, {norm, group}, {norm, group}};
  std::stringstream list(sites);
  std::string entry;
  std::set<std::string> named;
  while (std::getline(list, entry, ',')) {
    if (entry.empty()) continue;
    const auto colon = entry.find(':');
    if (colon == std::string::npos) {
      throw std::invalid_argument(fmt::format(
          "vit: norm_sites entry '{}' is not site:kind (sites attn, mlp, final; kinds ln, pln, pls, none)", entry));
    }
    const auto site = entry.substr(0, colon), kind = entry.substr(colon + 1);
    // Two kinds for one site would leave one silently unused.
    if (!named.insert(site).second) {
      throw std::invalid_argument(fmt::format("vit: norm_sites names the site '{}' twice ('{}')", site, sites));
    }
    check_kind(kind, fmt::format("norm_sites entry '{}'", entry));
    if (site == "attn") {
      out.attn.kind = kind;
    } else if (site == "mlp") {
      out.mlp.kind = kind;
    } else if (site == "final") {
      out.final.kind = kind;
    } else {
      throw std::invalid_argument(
          fmt::format("vit: norm_sites entry '{}' names an unknown site '{}'; sites: attn, mlp, final", entry, site));
    }
  }
  return out;
}

std::string to_string(const NormChoice& c) {
  if (c.kind == "pln") return fmt::format("PLN({})", c.group);
  if (c.kind == "pls") return fmt::format("PLS({})", c.group);
  if (c.kind == "ln") return "LN";
  return "none";
}

SizeDefaults size_defaults(const std::string& size) {
  if (size == "micro") return {128, 4, 4};
  if (size == "tiny") return {192, 12, 3};
  if (size == "small") return {384, 12, 6};
  throw std::invalid_argument(fmt::format("vit: size must be micro, tiny or small, got '{}'", size));
}

void validate(const ViTOptions& o) {
  const auto positive = [](int64_t v, const char* name) {
    if (v < 1) throw std::invalid_argument(fmt::format("vit: {} must be >= 1, got {}", name, v));
  };
  positive(o.width, "width");
  positive(o.blocks, "blocks");
  positive(o.heads, "heads");
  positive(o.patch, "patch");
  positive(o.mlp_ratio, "mlp_ratio");
  if (o.width % o.heads != 0) {
    throw std::invalid_argument(fmt::format("vit: heads {} must divide the width {}", o.heads, o.width));
  }
  if (o.image_size % o.patch != 0) {
    throw std::invalid_argument(
        fmt::format("vit: patch {} must divide the image size {}", o.patch, o.image_size));
  }
  if (o.act != "gelu" && o.act != "relu" && o.act != "silu" && o.act != "sat" && o.act != "none") {
    throw std::invalid_argument(fmt::format("vit: act must be gelu, relu, silu, sat or none, got '{}'", o.act));
  }
  if (!(o.drop_path >= 0.0 && o.drop_path < 1.0)) {
    throw std::invalid_argument(fmt::format("vit: drop_path must be in [0, 1), got {}", o.drop_path));
  }
  check_norm(o.norms.attn, o.width, "attn");
  check_norm(o.norms.mlp, o.width, "mlp");
  check_norm(o.norms.final, o.width, "final");
}

torch::nn::AnyModule make_norm(const NormChoice& c, int64_t width) {
  if (c.kind == "ln") return torch::nn::AnyModule(torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  if (c.kind == "none") return torch::nn::AnyModule(torch::nn::Identity());
  return torch::nn::AnyModule(
      pln::ParallelLN(pln::ParallelLNOptions(width, c.group).dim(3).centering(c.kind == "pln")));
}

torch::Tensor drop_path(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = x.size(0);
  const auto keep = torch::empty(shape, x.options()).bernoulli_(1.0 - p);
  return x * keep / (1.0 - p);
}

SelfAttentionImpl::SelfAttentionImpl(int64_t width_, int64_t heads_) : width(width_), heads(heads_) { reset(); }

void SelfAttentionImpl::reset() {
  qkv = register_module("qkv", torch::nn::Linear(width, 3 * width));
  proj = register_module("proj", torch::nn::Linear(width, width));
}

void SelfAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "SelfAttention(width=" << width << ", heads=" << heads << ")";
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t n = x.size(0), t = x.size(1), d = width / heads;
  // [N, T, 3 width] -> q, k, v of [N, heads, T, d]
  const auto qkv_heads = qkv->forward(x).view({n, t, 3, heads, d}).permute({2, 0, 3, 1, 4});
  const auto q = qkv_heads[0], k = qkv_heads[1], v = qkv_heads[2];
  const auto weights = torch::matmul(q * (1.0 / std::sqrt(double(d))), k.transpose(-2, -1)).softmax(-1);
  return proj->forward(torch::matmul(weights, v).transpose(1, 2).reshape({n, t, width}));
}

BlockImpl::BlockImpl(const ViTOptions& options_, double drop_path_) : options(options_), drop_path(drop_path_) {
  reset();
}

void BlockImpl::reset() {
  norm_attn = make_norm(options.norms.attn, options.width);
  register_module("norm_attn", norm_attn.ptr());
  attention = register_module("attention", SelfAttention(options.width, options.heads));
  norm_mlp = make_norm(options.norms.mlp, options.width);
  register_module("norm_mlp", norm_mlp.ptr());
  fc1 = register_module("fc1", torch::nn::Linear(options.width, options.mlp_ratio * options.width));
  act = make_activation(options.act);
  register_module("act", act.ptr());
  fc2 = register_module("fc2", torch::nn::Linear(options.mlp_ratio * options.width, options.width));
}

void BlockImpl::pretty_print(std::ostream& stream) const {
  stream << "Block(drop_path=" << drop_path << ")";
}

torch::Tensor BlockImpl::forward(const torch::Tensor& input) {
  auto x = input + vit::drop_path(attention->forward(norm_attn.forward(input)), drop_path, is_training());
  const auto hidden = act.forward(fc1->forward(norm_mlp.forward(x)));
  return x + vit::drop_path(fc2->forward(hidden), drop_path, is_training());
}

VisionTransformerImpl::VisionTransformerImpl(const ViTOptions& options_) : options(options_) { reset(); }

void VisionTransformerImpl::reset() {
  validate(options);
  const int64_t tokens = (options.image_size / options.patch) * (options.image_size / options.patch) + 1;
  patch_embed = register_module(
      "patch_embed", torch::nn::Conv2d(torch::nn::Conv2dOptions(options.in_channels, options.width, options.patch)
                                           .stride(options.patch)));
  cls_token = register_parameter("cls_token", torch::zeros({1, 1, options.width}));
  pos_embed = register_parameter("pos_embed", torch::zeros({1, tokens, options.width}));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t b = 0; b < options.blocks; ++b) {
    const double rate = options.blocks > 1 ? options.drop_path * double(b) / double(options.blocks - 1) : options.drop_path;
    blocks->push_back(Block(options, rate));
  }
  norm = make_norm(options.norms.final, options.width);
  register_module("norm", norm.ptr());
  head = register_module("head", torch::nn::Linear(options.width, options.classes));
  reset_parameters();
}

void VisionTransformerImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      truncated_normal_(linear->weight, 0.02);
      linear->bias.zero_();
    }
  }
  truncated_normal_(pos_embed, 0.02);
  cls_token.zero_();
}

void VisionTransformerImpl::pretty_print(std::ostream& stream) const {
  const int64_t side = options.image_size / options.patch;
  stream << "VisionTransformer(image=" << options.image_size << ", patch=" << options.patch
         << ", tokens=" << side * side + 1 << ", width=" << options.width << ", blocks=" << options.blocks
         << ", heads=" << options.heads << ", mlp=" << options.mlp_ratio * options.width
         << ", norms attn/mlp/final=" << to_string(options.norms.attn) << "/" << to_string(options.norms.mlp) << "/"
         << to_string(options.norms.final) << ", act=" << options.act << ", drop_path=" << options.drop_path << ")";
}

torch::Tensor VisionTransformerImpl::forward(const torch::Tensor& images) {
  const int64_t n = images.size(0);
  auto x = patch_embed->forward(images).flatten(2).transpose(1, 2);  // [N, T - 1, width]
  x = torch::cat({cls_token.expand({n, 1, options.width}), x}, 1) + pos_embed;
  for (const auto& block : *blocks) x = block->as<Block>()->forward(x);
  return head->forward(norm.forward(x.narrow(1, 0, 1)).squeeze(1));
}

}  // namespace pln::exp::vit
