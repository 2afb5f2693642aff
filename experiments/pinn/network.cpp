#include "pinn/network.h"

#include "spec/keys.h"

#include <pln/testing.h>

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace pln::exp::pinn {

void NetSpec::validate() const {
  if (in_dim < 1) throw std::invalid_argument(fmt::format("pinn: in_dim must be >= 1, got {}", in_dim));
  if (width < 1) throw std::invalid_argument(fmt::format("pinn: width must be >= 1, got {}", width));
  if (depth < 1) throw std::invalid_argument(fmt::format("pinn: depth must be >= 1, got {}", depth));
  if (norm != "pln" && norm != "pls" && norm != "ln" && norm != "none") {
    throw std::invalid_argument("pinn: norm must be one of pln|pls|ln|none, got '" + norm + "'");
  }
  if (act != "none" && act != "tanh" && act != "relu" && act != "sigmoid" && act != "sat" && act != "silu") {
    throw std::invalid_argument("pinn: act must be one of none|tanh|relu|sigmoid|sat|silu, got '" + act + "'");
  }
  check_group_divides(norm, width, group);
}

PinnNetImpl::PinnNetImpl(const NetSpec& spec, torch::Dtype dtype) : spec_(spec) {
  spec_.validate();
  const auto layer = [&](int64_t in, int64_t out) {
    auto lin = register_module("linear" + std::to_string(linears_.size()),
                               torch::nn::Linear(torch::nn::LinearOptions(in, out)));
    lin->to(dtype);
    linears_.push_back(lin);
  };
  layer(spec_.in_dim, spec_.width);
  for (int64_t b = 0; b < spec_.depth; ++b) {
    if (spec_.norm != "none") {
      const int64_t g = spec_.norm == "ln" ? spec_.width : spec_.group;
      auto options = pln::ParallelLNOptions(spec_.width, g)
                         .dim(2).affine(false).eps(spec_.eps).centering(spec_.norm != "pls");
      norms_.push_back(register_module("norm" + std::to_string(b), pln::ParallelLN(options)));
    }
    layer(spec_.width, b + 1 == spec_.depth ? 1 : spec_.width);
  }
}

int64_t PinnNetImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor PinnNetImpl::activate(const torch::Tensor& z) const {
  const auto& a = spec_.act;
  if (a == "tanh") return torch::tanh(z);
  if (a == "relu") return torch::relu(z);
  if (a == "sigmoid") return torch::sigmoid(z);
  if (a == "sat") return z * torch::rsqrt(1 + z * z);
  if (a == "silu") return z * torch::sigmoid(z);
  return z;
}

torch::Tensor PinnNetImpl::forward(const torch::Tensor& x) {
  auto h = linears_[0]->forward(x);
  for (int64_t b = 0; b < spec_.depth; ++b) {
    if (!norms_.empty()) h = norms_[b]->forward(h);
    h = linears_[b + 1]->forward(activate(h));
  }
  return h;
}

torch::Tensor activation_jet(const std::string& act, const torch::Tensor& jet, bool fused) {
  if (act == "none") return jet;
  const auto activation = pln::activation_from_name(act);
  return fused ? pln::functional::activation_jet(jet, activation)
               : pln::detail::activation_jet_composite(jet, activation);
}

torch::Tensor PinnNetImpl::normalise_jet(const torch::Tensor& jet, size_t block) const {
  return pln::functional::parallel_ln_jet(jet, norms_[block]->options);
}

namespace {

// A Linear on a jet: every part goes through the weight (one mm for all of
// them), only the values take the bias. The bias is added in place to the
// values' rows of the product, and its gradient sums the values' gradient
// only: no pass over the whole jet adds a broadcast shift or reduces its
// gradient, which autograd's add would.
class JetLinear : public torch::autograd::Function<JetLinear> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& jet,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    const auto x = jet.contiguous();
    const int64_t parts = x.size(0), n = x.size(1), in = x.size(2), out = weight.size(0);
    const auto flat = x.view({parts * n, in});
    // The network's scalar output: a gemv, which measured 1.6-2.5x a gemm of
    // one column (float64, 3,000-15,000 rows of 128; its weight's gradient up
    // to 4x).
    auto y = (out == 1 ? torch::mv(flat, weight[0]) : torch::mm(flat, weight.t())).view({parts, n, out});
    y[0].add_(bias);
    ctx->save_for_backward({x, weight});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1];
    const auto grad = grads[0].contiguous();
    const int64_t rows = x.size(0) * x.size(1);
    const auto flat = grad.view({rows, grad.size(2)});
    const auto x_flat = x.view({rows, x.size(2)});
    if (weight.size(0) == 1) {
      // An outer product (the same bits as a gemm with one inner index) and a gemv.
      return {(flat * weight).view(x.sizes()), torch::mv(x_flat.t(), flat.select(1, 0)).unsqueeze(0),
              grad[0].sum(0)};
    }
    return {torch::mm(flat, weight).view(x.sizes()), torch::mm(flat.t(), x_flat), grad[0].sum(0)};
  }
};

}  // namespace

torch::Tensor PinnNetImpl::linear_jet(const torch::Tensor& jet, size_t layer) const {
  const auto& lin = linears_[layer];
  return JetLinear::apply(jet, lin->weight, lin->bias);
}

Derivatives PinnNetImpl::forward_jet(const torch::Tensor& x) {
  const int64_t n = x.size(0), dirs = spec_.in_dim;
  auto& first = linears_[0];
  // d(Wx + b)/dx_d is column d of W at every point; the second derivatives are 0.
  auto jet = torch::cat({first->forward(x).unsqueeze(0),
                         first->weight.t().unsqueeze(1).expand({dirs, n, spec_.width}),
                         torch::zeros({dirs, n, spec_.width}, x.options())});
  for (int64_t b = 0; b < spec_.depth; ++b) {
    if (!norms_.empty()) jet = normalise_jet(jet, b);
    jet = linear_jet(activation_jet(spec_.act, jet, spec_.fused_activation_jets), b + 1);
  }
  jet = jet.squeeze(-1);
  return {jet[0], jet.narrow(0, 1, dirs), jet.narrow(0, 1 + dirs, dirs)};
}

}  // namespace pln::exp::pinn
