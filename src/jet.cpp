// pln::functional::parallel_ln_jet: checks, the composite formulas and the
// custom autograd function over the fused jet kernels.

#include <pln/jet.h>
#include <pln/testing.h>

#include "cpu/jet_kernels.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

namespace pln {
namespace {

void check_jet(const torch::Tensor& jet, const ParallelLNOptions& o, const torch::Tensor& weight,
               const torch::Tensor& bias) {
  o.validate();
  TORCH_CHECK(jet.dim() >= 2, "parallel_ln_jet: expected a jet [1 + 2D, ..., C] of rank >= 2, got rank ",
              jet.dim());
  TORCH_CHECK(jet.size(0) % 2 == 1, "parallel_ln_jet: a jet has 1 + 2D parts on axis 0 (values, D first ",
              "and D second derivatives), got ", jet.size(0));
  TORCH_CHECK(jet.size(-1) == o.num_features(), "parallel_ln_jet: expected ", o.num_features(),
              " features on the last axis, got ", jet.size(-1), " (shape ", jet.sizes(), ")");
  TORCH_CHECK(o.p() == 2.0, "parallel_ln_jet: supports p = 2 only, got p = ", o.p());
  TORCH_CHECK(at::isFloatingType(jet.scalar_type()),
              "parallel_ln_jet: expected a floating-point jet, got ", jet.scalar_type());
  for (const auto* param : {&weight, &bias}) {
    if (!param->defined()) continue;
    TORCH_CHECK(param->numel() == o.num_features(), "parallel_ln_jet: expected ", o.num_features(),
                " affine parameters, got ", param->numel(), " (shape ", param->sizes(), ")");
  }
}

torch::Tensor apply_affine(torch::Tensor y, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (weight.defined()) y = y * weight.reshape({-1});
  if (bias.defined()) {
    // The bias moves the values; derivatives do not see it.
    const auto b = bias.reshape({1, -1}).to(y.scalar_type());
    const auto shift = at::cat({b, at::zeros({y.size(0) - 1, bias.numel()}, y.options())});
    std::vector<int64_t> shape(static_cast<size_t>(y.dim()), 1);
    shape.front() = y.size(0);
    shape.back() = bias.numel();
    y = y + shift.reshape(shape);
  }
  return y;
}

cpu::JetGeometry geometry_of(const torch::Tensor& jet, const ParallelLNOptions& o) {
  const int64_t parts = jet.size(0);
  return {jet.numel() / std::max<int64_t>(1, parts * o.num_features()), o.num_features(),
          o.num_per_group(), (parts - 1) / 2};
}

class JetFunction : public torch::autograd::Function<JetFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& jet,
                               int64_t num_per_group, double eps, bool centering) {
    const auto& x = jet;  // contiguous: see parallel_ln_jet
    auto y = at::empty_like(x);
    const auto options = ParallelLNOptions(x.size(-1), num_per_group).eps(eps).centering(centering);
    const auto g = geometry_of(x, options);
    if (x.numel() > 0) {
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_jet_forward", [&] {
        cpu::jet_forward<scalar_t>(g, x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), eps, centering);
      });
    }
    ctx->save_for_backward({x});
    ctx->saved_data["group"] = num_per_group;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["centering"] = centering;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const auto options = ParallelLNOptions(x.size(-1), ctx->saved_data["group"].toInt())
                             .eps(ctx->saved_data["eps"].toDouble())
                             .centering(ctx->saved_data["centering"].toBool());
    const auto& dy = grads[0];
    torch::Tensor dx;
    if (torch::GradMode::is_enabled()) {
      // A graph of the gradient is wanted: differentiate the composite formulas.
      const auto y = detail::parallel_ln_jet_composite(x, options);
      dx = torch::autograd::grad({y}, {x}, {dy}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    } else {
      const auto dyc = dy.contiguous();
      dx = at::empty_like(x);
      const auto g = geometry_of(x, options);
      if (x.numel() > 0) {
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_jet_backward", [&] {
          cpu::jet_backward<scalar_t>(g, dyc.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                      dx.data_ptr<scalar_t>(), options.eps(), options.centering());
        });
      }
    }
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

namespace detail {

torch::Tensor parallel_ln_jet_composite(const torch::Tensor& jet, const ParallelLNOptions& options,
                                        const torch::Tensor& weight, const torch::Tensor& bias) {
  check_jet(jet, options, weight, bias);
  const int64_t parts = jet.size(0), dirs = (parts - 1) / 2, group = options.num_per_group();
  auto shape = jet.sizes().vec();
  shape.back() /= group;
  shape.push_back(group);
  auto x = jet.reshape(shape);
  // Centring is linear, so every part (value or derivative) loses its own group mean.
  if (options.centering()) x = x - x.mean(-1, true);
  const auto xc = x[0];
  const auto d1 = x.narrow(0, 1, dirs);
  const auto d2 = x.narrow(0, 1 + dirs, dirs);
  const auto r = at::rsqrt((xc * xc).mean(-1, true) + options.eps());
  const auto s1 = 2 * (xc * d1).mean(-1, true);
  const auto s2 = 2 * (d1 * d1 + xc * d2).mean(-1, true);
  const auto r3 = r * r * r;
  const auto r1 = -0.5 * r3 * s1;
  const auto r2 = 0.75 * r3 * r * r * s1 * s1 - 0.5 * r3 * s2;
  const auto y = at::cat({(xc * r).unsqueeze(0), d1 * r + xc * r1, d2 * r + 2 * d1 * r1 + xc * r2});
  return apply_affine(y.reshape(jet.sizes()), weight, bias);
}

}  // namespace detail

namespace functional {

torch::Tensor parallel_ln_jet(const torch::Tensor& jet, const ParallelLNOptions& options,
                              const torch::Tensor& weight, const torch::Tensor& bias) {
  check_jet(jet, options, weight, bias);
  const auto type = jet.scalar_type();
  if (!jet.device().is_cpu() || (type != at::kFloat && type != at::kDouble)) {
    return detail::parallel_ln_jet_composite(jet, options, weight, bias);
  }
  // Made contiguous here, in the graph, so the saved input stays differentiable for double backward.
  const auto y = JetFunction::apply(jet.contiguous(), options.num_per_group(), options.eps(), options.centering());
  return apply_affine(y, weight, bias);
}

}  // namespace functional
}  // namespace pln
