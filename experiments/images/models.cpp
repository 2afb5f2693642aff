#include "images/models.h"

#include "spec/keys.h"

#include <fmt/format.h>
#include <pln/pln.h>

#include <stdexcept>

namespace pln::exp::images {

namespace {

torch::nn::AnyModule norm_module(int64_t channels, const BlockSpec& s, bool width_axis, int64_t spatial_width) {
  if (s.norm == "bn") return torch::nn::AnyModule(torch::nn::BatchNorm2d(channels));
  if (s.norm == "none") return torch::nn::AnyModule(torch::nn::Identity());
  const bool centering = s.norm != "pls";
  if (s.norm != "ln" && width_axis && spatial_width % s.group == 0) {
    const auto options = pln::ParallelLNOptions(spatial_width, s.group).dim(2).affine(false).centering(centering);
    return torch::nn::AnyModule(torch::nn::Functional([options](const torch::Tensor& x) {
      return pln::functional::parallel_ln(x.reshape({-1, x.size(3)}), options).view(x.sizes());
    }));
  }
  const int64_t g = s.norm == "ln" ? channels : s.group;
  return torch::nn::AnyModule(pln::ParallelLN(pln::ParallelLNOptions(channels, g).dim(4).centering(centering)));
}

torch::nn::AnyModule activation(const std::string& act) {
  if (act == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (act == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (act == "silu") return torch::nn::AnyModule(torch::nn::SiLU());
  // SAT(x) = sin(arctan x) = x / sqrt(1 + x^2), the paper's smooth saturating activation.
  if (act == "sat") {
    return torch::nn::AnyModule(torch::nn::Functional([](const torch::Tensor& x) { return x * torch::rsqrt(1 + x * x); }));
  }
  return torch::nn::AnyModule(torch::nn::Identity());
}

}  // namespace

void validate(const BlockSpec& s, int64_t width) {
  if (s.norm != "pln" && s.norm != "pls" && s.norm != "ln" && s.norm != "bn" && s.norm != "none") {
    throw std::invalid_argument("norm must be one of pln|pls|ln|bn|none, got '" + s.norm + "'");
  }
  if (s.act != "none" && s.act != "relu" && s.act != "tanh" && s.act != "sat" && s.act != "silu") {
    throw std::invalid_argument("act must be one of none|relu|tanh|sat|silu, got '" + s.act + "'");
  }
  if (s.axis != "channel" && s.axis != "mixed") {
    throw std::invalid_argument("axis must be one of channel|mixed, got '" + s.axis + "'");
  }
  check_group_divides(s.norm, width, s.group);
  if (width < 1) throw std::invalid_argument(fmt::format("width must be >= 1, got {}", width));
}

void add_conv_block(torch::nn::Sequential& net, int64_t in, int64_t out, const BlockSpec& spec, int64_t index,
                    int64_t spatial_width) {
  net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)));
  const bool width_axis = spec.axis == "mixed" && index % 2 == 1;
  net->push_back(norm_module(out, spec, width_axis, spatial_width));
  net->push_back(activation(spec.act));
}

torch::nn::Sequential make_cnn(int64_t in_channels, int64_t image_size, int64_t width, int64_t depth,
                               int64_t classes, const BlockSpec& spec) {
  validate(spec, width);
  if (depth < 1) throw std::invalid_argument(fmt::format("depth must be >= 1, got {}", depth));
  torch::nn::Sequential net;
  int64_t channels = in_channels, size = image_size, index = 0;
  for (int stage = 0; stage < 3; ++stage) {
    if (stage > 0) {
      net->push_back(torch::nn::AvgPool2d(2));
      size /= 2;
    }
    for (int64_t d = 0; d < depth; ++d) {
      add_conv_block(net, channels, width << stage, spec, index++, size);
      channels = width << stage;
    }
  }
  net->push_back(torch::nn::AdaptiveAvgPool2d(1));
  net->push_back(torch::nn::Flatten());
  net->push_back(torch::nn::Linear(channels, classes));
  return net;
}

torch::nn::Sequential make_vgg16(int64_t in_channels, int64_t width, int64_t classes, const BlockSpec& spec) {
  validate(spec, width);
  if (width % 8 != 0) throw std::invalid_argument(fmt::format("vgg: width must be a multiple of 8, got {}", width));
  const std::vector<std::vector<int64_t>> stages = {{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  torch::nn::Sequential net;
  int64_t channels = in_channels, size = 32, index = 0;
  for (const auto& stage : stages) {
    for (int64_t c : stage) {
      const int64_t out = c * width / 64;
      add_conv_block(net, channels, out, spec, index++, size);
      channels = out;
    }
    net->push_back(torch::nn::MaxPool2d(2));
    size /= 2;
  }
  net->push_back(torch::nn::Flatten());
  net->push_back(torch::nn::Linear(channels, classes));
  return net;
}

void init_weights(torch::nn::Module& net, double scale, double bias) {
  torch::NoGradGuard no_grad;
  for (auto& module : net.modules(/*include_self=*/false)) {
    torch::Tensor* weight = nullptr;
    torch::Tensor* b = nullptr;
    if (auto* conv = module->as<torch::nn::Conv2d>()) weight = &conv->weight, b = &conv->bias;
    if (auto* lin = module->as<torch::nn::Linear>()) weight = &lin->weight, b = &lin->bias;
    if (!weight) continue;
    torch::nn::init::kaiming_normal_(*weight, 0, torch::kFanIn, torch::kReLU);
    weight->mul_(scale);
    if (b->defined()) b->fill_(bias);
  }
}

}  // namespace pln::exp::images
