// Parallel LN on second-order Taylor jets, in the shape every op has (ops.h):
//
//   pln::parallel_ln_jet           the jet [1 + 2D, ..., C] of Parallel LN (p = 2, no affine)
//   pln::parallel_ln_jet_backward  its input's gradient (the fused kernels take
//                                  the statistics again from the jet)
//
// CPU float32 and float64 jets run the fused kernels of src/cpu/jet_kernels.cpp
// (computed in double); other dtypes and devices the composite formulation.
// The op has no affine parameters (pln::functional::parallel_ln_jet applies
// them), so autocast falls through: the jet keeps its dtype.

#include "ops/autograd_support.h"
#include "ops/ops.h"

#include "cpu/jet_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>

namespace pln::ops {

namespace jet_op {

using JetFn = at::Tensor(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering);
using JetBackwardFn = at::Tensor(const at::Tensor& grad_output, const at::Tensor& jet, int64_t num_per_group,
                                 double eps, bool centering);

namespace {

// ----------------------------------------------------------------- checks ---

void check(const at::Tensor& jet, int64_t num_per_group, double eps) {
  TORCH_CHECK(jet.defined(), "pln::parallel_ln_jet: the jet is undefined");
  TORCH_CHECK(jet.dim() >= 2, "parallel_ln_jet: expected a jet [1 + 2D, ..., C] of rank >= 2, got rank ", jet.dim());
  TORCH_CHECK(jet.size(0) % 2 == 1, "parallel_ln_jet: a jet has 1 + 2D parts on axis 0 (values, D first ",
              "and D second derivatives), got ", jet.size(0));
  TORCH_CHECK(at::isFloatingType(jet.scalar_type()), "parallel_ln_jet: expected a floating-point jet, got ",
              jet.scalar_type());
  const int64_t C = jet.size(-1);
  TORCH_CHECK(num_per_group > 0 && C % num_per_group == 0, "parallel_ln_jet: num_per_group (", num_per_group,
              ") must be a positive divisor of the number of features (", C, ")");
  TORCH_CHECK(eps >= 0 && std::isfinite(eps), "parallel_ln_jet: eps must be finite and >= 0, got ", eps);
}

// Whether the fused kernels take the jet: CPU float32 and float64 (they compute in double).
bool fused(const at::Tensor& jet) { return fused_kernels_take(jet, 2.0, /*half_types=*/false); }

// -------------------------------------------------------------- composite ---

// Per group with centred value a and per direction centred derivatives b, c:
//   s = mean(a^2), r = (s + eps)^(-1/2), s1 = 2 mean(a b), s2 = 2 mean(b^2 + a c)
//   r1 = -r^3 s1 / 2, r2 = 3 r^5 s1^2 / 4 - r^3 s2 / 2
//   y = a r, y1 = b r + a r1, y2 = c r + 2 b r1 + a r2
// in the jet's compute type, rounded once to its type.
at::Tensor formulation(const at::Tensor& jet, int64_t group, double eps, bool centering) {
  const int64_t parts = jet.size(0), dirs = (parts - 1) / 2;
  auto shape = jet.sizes().vec();
  shape.back() /= group;
  shape.push_back(group);
  auto x = in_compute_type(jet, jet.scalar_type()).reshape(shape);
  // Centring is linear, so every part (value or derivative) loses its own group mean.
  if (centering) x = centred(x);
  const auto xc = x[0], d1 = x.narrow(0, 1, dirs), d2 = x.narrow(0, 1 + dirs, dirs);
  const auto r = at::rsqrt((xc * xc).mean(-1, true) + eps);
  const auto s1 = 2 * (xc * d1).mean(-1, true), s2 = 2 * (d1 * d1 + xc * d2).mean(-1, true);
  const auto r3 = r * r * r;
  const auto r1 = -0.5 * r3 * s1;
  const auto r2 = 0.75 * r3 * r * r * s1 * s1 - 0.5 * r3 * s2;
  const auto y = at::cat({(xc * r).unsqueeze(0), d1 * r + xc * r1, d2 * r + 2 * d1 * r1 + xc * r2});
  return y.reshape(jet.sizes()).to(jet.scalar_type());
}

// The input's gradient from the formulation, as a graph where one is wanted (create_graph).
at::Tensor gradient_formulation(const at::Tensor& grad_output, const at::Tensor& jet, int64_t group, double eps,
                                bool centering, bool create_graph) {
  const at::AutoGradMode enable_grad(true);
  const at::Tensor x = create_graph ? jet : jet.detach().requires_grad_();
  const at::Tensor y = formulation(x, group, eps, centering);
  return torch::autograd::grad({y}, {x}, {grad_output}, /*retain_graph=*/create_graph, create_graph)[0];
}

cpu::JetGeometry geometry_of(const at::Tensor& jet, int64_t group) {
  const int64_t parts = jet.size(0), C = jet.size(-1);
  return {jet.numel() / std::max<int64_t>(1, parts * C), C, group, (parts - 1) / 2};
}

at::Tensor composite_kernel(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  check(jet, num_per_group, eps);
  return formulation(jet, num_per_group, eps, centering).contiguous();
}

at::Tensor composite_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet, int64_t num_per_group,
                                     double eps, bool centering) {
  check(jet, num_per_group, eps);
  return gradient_formulation(grad_output, jet, num_per_group, eps, centering, /*create_graph=*/false);
}

// ------------------------------------------------------------------- CPU ---

at::Tensor cpu_kernel(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  if (!fused(jet)) return composite_kernel(jet, num_per_group, eps, centering);
  check(jet, num_per_group, eps);
  const at::Tensor x = jet.contiguous();
  at::Tensor y = at::empty_like(x);
  if (x.numel() > 0) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_jet", [&] {
      cpu::jet_forward<scalar_t>(geometry_of(x, num_per_group), x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), eps,
                                 centering);
    });
  }
  return y;
}

at::Tensor cpu_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet, int64_t num_per_group,
                               double eps, bool centering) {
  if (!fused(jet)) return composite_backward_kernel(grad_output, jet, num_per_group, eps, centering);
  check(jet, num_per_group, eps);
  TORCH_CHECK(grad_output.sizes() == jet.sizes() && grad_output.scalar_type() == jet.scalar_type(),
              "pln::parallel_ln_jet_backward: grad_output is ", grad_output.scalar_type(), " of shape ",
              grad_output.sizes(), ", the jet ", jet.scalar_type(), " of shape ", jet.sizes());
  const at::Tensor x = jet.contiguous(), dy = grad_output.contiguous();
  at::Tensor dx = at::empty_like(x);
  if (x.numel() > 0) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_jet_backward", [&] {
      cpu::jet_backward<scalar_t>(geometry_of(x, num_per_group), dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                  dx.data_ptr<scalar_t>(), eps, centering);
    });
  }
  return dx;
}

// ------------------------------------------------------------------ Meta ---

at::Tensor meta_kernel(const at::Tensor& jet, int64_t num_per_group, double eps, bool) {
  check(jet, num_per_group, eps);
  return at::empty_like(jet, at::MemoryFormat::Contiguous);
}

at::Tensor meta_backward_kernel(const at::Tensor&, const at::Tensor& jet, int64_t num_per_group, double eps, bool) {
  check(jet, num_per_group, eps);
  return at::empty_like(jet, at::MemoryFormat::Contiguous);
}

// -------------------------------------------------------------- Autograd ---

using autograd_support::Route;

at::Tensor call(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  static const auto op = handle<JetFn>("pln::parallel_ln_jet");
  return op.call(jet, num_per_group, eps, centering);
}

at::Tensor call_backward(const at::Tensor& grad_output, const at::Tensor& jet, int64_t num_per_group, double eps,
                         bool centering) {
  static const auto op = handle<JetBackwardFn>("pln::parallel_ln_jet_backward");
  return op.call(grad_output, jet, num_per_group, eps, centering);
}

class JetFunction : public torch::autograd::Function<JetFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& jet, int64_t num_per_group,
                            double eps, bool centering) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({jet});
    ctx->saved_data["group"] = num_per_group;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["centering"] = centering;
    return call(jet, num_per_group, eps, centering);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto jet = ctx->get_saved_variables()[0];
    const at::Tensor none;
    return {call_backward(grads[0], jet, ctx->saved_data["group"].toInt(), ctx->saved_data["eps"].toDouble(),
                          ctx->saved_data["centering"].toBool()),
            none, none, none};
  }
};

at::Tensor autograd_kernel(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  switch (autograd_support::route(fused(jet), jet)) {
    case Route::kBelowAutograd: {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return call(jet, num_per_group, eps, centering);
    }
    case Route::kFunction:
      return JetFunction::apply(jet, num_per_group, eps, centering);
    case Route::kComposite:
      break;
  }
  check(jet, num_per_group, eps);
  return formulation(jet, num_per_group, eps, centering);
}

at::Tensor autograd_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet, int64_t num_per_group,
                                    double eps, bool centering) {
  if (autograd_support::route(fused(jet), grad_output, jet) == Route::kBelowAutograd) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad_output, jet, num_per_group, eps, centering);
  }
  // A graph of the gradient is wanted (PINNs differentiate the network twice): the formulation's.
  check(jet, num_per_group, eps);
  return gradient_formulation(grad_output, jet, num_per_group, eps, centering, /*create_graph=*/true);
}

}  // namespace

at::Tensor composite(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  check(jet, num_per_group, eps);
  return formulation(jet, num_per_group, eps, centering);
}

}  // namespace jet_op

at::Tensor parallel_ln_jet(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering) {
  return jet_op::call(jet, num_per_group, eps, centering);
}

}  // namespace pln::ops

// ------------------------------------------------------------ registration ---

namespace jet_kernels_op = pln::ops::jet_op;

TORCH_LIBRARY_FRAGMENT(pln, m) {
  m.def("parallel_ln_jet(Tensor jet, int num_per_group, float eps=1e-05, bool centering=True) -> Tensor");
  m.def("parallel_ln_jet_backward(Tensor grad_output, Tensor jet, int num_per_group, float eps=1e-05, "
        "bool centering=True) -> Tensor");
}

TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("parallel_ln_jet", TORCH_FN(jet_kernels_op::cpu_kernel));
  m.impl("parallel_ln_jet_backward", TORCH_FN(jet_kernels_op::cpu_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Meta, m) {
  m.impl("parallel_ln_jet", TORCH_FN(jet_kernels_op::meta_kernel));
  m.impl("parallel_ln_jet_backward", TORCH_FN(jet_kernels_op::meta_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("parallel_ln_jet", TORCH_FN(jet_kernels_op::composite_kernel));
  m.impl("parallel_ln_jet_backward", TORCH_FN(jet_kernels_op::composite_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Autograd, m) {
  m.impl("parallel_ln_jet", TORCH_FN(jet_kernels_op::autograd_kernel));
  m.impl("parallel_ln_jet_backward", TORCH_FN(jet_kernels_op::autograd_backward_kernel));
}
