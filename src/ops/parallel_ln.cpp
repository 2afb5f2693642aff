// The Parallel LN operators, in the shape every op has (ops.h):
//
//   pln::parallel_ln            y = PLN(x): any p, device and float dtype
//   pln::pq_norm                PQNorm (p = q = 2 is parallel_ln)
//   pln::parallel_ln_forward    y plus the per-group mean and 1/std a backward reads (p = 2, fused kernels)
//   pln::parallel_ln_backward   dx, dweight, dbias from those statistics
//   pln::parallel_ln_composite  the composite formulation as an op of its own
//                               (CompositeImplicitAutograd: tracers see its ATen ops)
//
// The path of a call, schema to arithmetic: the registration at the end of
// this file -> the Autograd kernel (the route, autograd_support.h) -> the CPU
// kernel (cpu_forward) -> src/cpu/kernels.cpp (which path: group size and
// layout) -> the path's header under src/cpu/kernels/ (the loops).

#include "ops/aten_maths.h"
#include "ops/autograd_support.h"
#include "ops/formulation.h"
#include "ops/ops.h"
#include "ops/schemas.h"
#include "ops/stored.h"

#include "cpu/kernels.h"
#include "layout.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

namespace pln::ops {

namespace {

using ParallelLNFn = at::Tensor(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                                int64_t num_features, int64_t num_per_group, double eps, bool centering,
                                c10::string_view layout, double p);
using PQNormFn = at::Tensor(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                            bool centering, c10::string_view layout);
using ForwardFn = Tensor3(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                          int64_t num_features, int64_t num_per_group, double eps, bool centering,
                          c10::string_view layout);
using BackwardFn = Tensor3(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                           const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                           int64_t num_per_group, double eps, bool centering, c10::string_view layout);

}  // namespace

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  static const auto op = handle<ParallelLNFn>("pln::parallel_ln");
  return op.call(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps, bool centering,
                   c10::string_view layout) {
  static const auto op = handle<PQNormFn>("pln::pq_norm");
  return op.call(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double eps, bool centering,
                            c10::string_view layout) {
  static const auto op = handle<ForwardFn>("pln::parallel_ln_forward");
  return op.call(input, weight, bias, num_features, num_per_group, eps, centering, layout);
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                             const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering, c10::string_view layout) {
  static const auto op = handle<BackwardFn>("pln::parallel_ln_backward");
  return op.call(grad_output, input, mean, rstd, weight, num_features, num_per_group, eps, centering, layout);
}

namespace parallel_ln_op {

namespace {

// ------------------------------------------------------------- composite ---

formulation::Grouping grouping(const ParallelNormSpec& spec) {
  return {layout_channel_axis(spec.layout), spec.num_per_group, spec.eps, spec.centering, spec.p, spec.q};
}

// The outputs' strides: the fused kernels' (channels-last for a channels-last
// NCHW input), which the Meta kernels promise whatever path runs.
at::Tensor like_input(const at::Tensor& input, Layout layout) {
  return at::empty_like(input, input.options(), detail::output_format(input, layout));
}

at::Tensor composite_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                            bool centering, c10::string_view layout) {
  return composite(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, q));
}

// PQNorm on every device: p = q = 2 is Parallel LN (its fused kernels where they take the input).
at::Tensor pq_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                     int64_t num_features, int64_t num_per_group, double p, double q, double eps, bool centering,
                     c10::string_view layout) {
  if (p == 2.0 && q == 2.0) return parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
  return composite_kernel(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
}

// ------------------------------------------------------------------- CPU ---

// An affine parameter as the kernels read it: [C] contiguous values of the
// input's compute type, or `fill`.
at::Tensor affine_or(const OptionalTensor& t, const at::Tensor& x, int64_t num_features, double fill) {
  const auto type = x.options().dtype(stats_type(x.scalar_type()));
  return t.has_value() ? t->reshape({-1}).to(type).contiguous() : at::full({num_features}, fill, type);
}

// y, and the per-group mean and 1/std where save_stats (a backward follows).
Tensor3 cpu_forward(const at::Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                    const ParallelNormSpec& spec, bool save_stats) {
  const detail::KernelView view = detail::kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(view.format));
  at::Tensor mean, rstd;
  if (save_stats) {
    // [outer, groups, inner] in memory, shaped like x with groups for features.
    const auto shape = stats_shape(x, spec);
    const auto stats = x.options().dtype(stats_type(x.scalar_type()));
    mean = at::empty_symint(shape, stats, view.format);
    rstd = at::empty_symint(shape, stats, view.format);
  }
  const at::Tensor w = affine_or(weight, x, spec.num_features, 1.0), b = affine_or(bias, x, spec.num_features, 0.0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "pln_parallel_ln_forward", [&] {
    pln::cpu::forward(view.geometry, stored_ptr<scalar_t>(view.data), compute_ptr<scalar_t>(w),
                      compute_ptr<scalar_t>(b), stored_ptr<scalar_t>(y),
                      save_stats ? compute_ptr<scalar_t>(mean) : nullptr,
                      save_stats ? compute_ptr<scalar_t>(rstd) : nullptr, spec.eps, spec.centering);
  });
  return {y, mean, rstd};
}

at::Tensor cpu_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                      int64_t num_features, int64_t num_per_group, double eps, bool centering,
                      c10::string_view layout, double p) {
  if (!fused_kernels_take(input, p)) {
    return composite_kernel(input, weight, bias, num_features, num_per_group, p, p, eps, centering, layout);
  }
  const auto spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout));
  return std::get<0>(cpu_forward(input, weight, bias, spec, /*save_stats=*/false));
}

Tensor3 cpu_forward_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                           int64_t num_features, int64_t num_per_group, double eps, bool centering,
                           c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout));
  return cpu_forward(input, weight, bias, spec, /*save_stats=*/true);
}

Tensor3 cpu_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                            const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                            int64_t num_per_group, double eps, bool centering, c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  const detail::KernelView view = detail::kernel_view(input, spec.layout, spec.num_features, spec.num_per_group);
  const at::Tensor dy = detail::conform(grad_output, view);
  const at::Tensor m = detail::conform(mean, view), r = detail::conform(rstd, view);
  const at::Tensor w = affine_or(weight, input, spec.num_features, 1.0);
  at::Tensor dx = at::empty(input.sizes(), input.options().memory_format(view.format));
  // Per-feature sums are accumulated in double whatever the input's dtype.
  at::Tensor dw = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  at::Tensor db = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "pln_parallel_ln_backward", [&] {
    pln::cpu::backward(view.geometry, stored_ptr<scalar_t>(dy), stored_ptr<scalar_t>(view.data),
                       compute_ptr<scalar_t>(m), compute_ptr<scalar_t>(r), compute_ptr<scalar_t>(w), spec.centering,
                       stored_ptr<scalar_t>(dx), dw.data_ptr<double>(), db.data_ptr<double>());
  });
  const auto param_type = weight.has_value() ? weight->scalar_type() : input.scalar_type();
  return {dx, dw.to(param_type), db.to(param_type)};
}

// ------------------------------------------------------------------ Meta ---

at::Tensor meta_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout, p));
  return like_input(input, spec.layout);
}

at::Tensor meta_pq_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                          int64_t num_features, int64_t num_per_group, double p, double q, double eps, bool centering,
                          c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout, p, q));
  return like_input(input, spec.layout);
}

Tensor3 meta_forward_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double eps, bool centering,
                            c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout));
  // The fused kernels' order: [outer, groups, inner], or positions-major for a
  // channels-last input, which the same memory format gives the statistics.
  const auto stats = input.options().dtype(stats_type(input.scalar_type()));
  const auto shape = stats_shape(input, spec);
  const auto format = detail::output_format(input, spec.layout);
  return {like_input(input, spec.layout), at::empty_symint(shape, stats, format), at::empty_symint(shape, stats, format)};
}

Tensor3 meta_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                             const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering, c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  const auto params = input.options().dtype(weight.has_value() ? weight->scalar_type() : input.scalar_type());
  return {like_input(input, spec.layout), at::empty({spec.num_features}, params),
          at::empty({spec.num_features}, params)};
}

// -------------------------------------------------------------- Autograd ---

using autograd_support::placeholder;
using autograd_support::Route;
using autograd_support::SavedGrouping;
using autograd_support::unless_placeholder;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ParallelLNFunction : public torch::autograd::Function<ParallelLNFunction> {
 public:
  // LibTorch 1.13's Function::apply cannot take undefined tensors: an absent
  // weight or bias travels as an empty placeholder, flagged by has_weight/has_bias.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight_or_empty,
                               const at::Tensor& bias_or_empty, bool has_weight, bool has_bias, int64_t num_features,
                               int64_t num_per_group, double eps, bool centering, const std::string& layout) {
    // Below autograd, or this op's own autograd kernel would run again.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [output, mean, rstd] =
        parallel_ln_forward(input, unless_placeholder(has_weight, weight_or_empty),
                            unless_placeholder(has_bias, bias_or_empty), num_features, num_per_group, eps, centering,
                            layout);
    ctx->save_for_backward({input, weight_or_empty, bias_or_empty, mean, rstd});
    ctx->mark_non_differentiable({mean, rstd});
    // The statistics' gradients are never used: without this, autograd would
    // fill a zero tensor for each of them before every backward.
    ctx->set_materialize_grads(false);
    SavedGrouping{has_weight, has_bias, num_features, num_per_group, eps, centering}.save(ctx);
    ctx->saved_data["layout"] = layout;
    return {output, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // No gradient reached the output (grads are not materialised): none flows
    // back, one undefined gradient for each of forward's ten arguments.
    if (!grad_outputs[0].defined()) return variable_list(10);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &weight = saved[1], &bias = saved[2];
    const auto g = SavedGrouping::load(ctx);
    const std::string layout = ctx->saved_data["layout"].toStringRef();
    auto [dx, dweight, dbias] =
        parallel_ln_backward(grad_outputs[0], input, saved[3], saved[4], unless_placeholder(g.has_weight, weight),
                             g.num_features, g.num_per_group, g.eps, g.centering, layout);
    const at::Tensor none;
    return {ctx->needs_input_grad(0) ? dx : none,
            g.has_weight && ctx->needs_input_grad(1) ? dweight.reshape_as(weight) : none,
            g.has_bias && ctx->needs_input_grad(2) ? dbias.reshape_as(bias) : none,
            none, none, none, none, none, none, none};
  }
};

at::Tensor autograd_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                           int64_t num_features, int64_t num_per_group, double eps, bool centering,
                           c10::string_view layout, double p) {
  switch (autograd_support::route(fused_kernels_take(input, p), input, weight, bias)) {
    case Route::kBelowAutograd: {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
    }
    case Route::kFunction:
      return std::get<0>(parallel_ln_forward(input, weight, bias, num_features, num_per_group, eps, centering, layout));
    case Route::kComposite:
      break;
  }
  return composite(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, p));
}

at::Tensor autograd_pq_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                              int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                              bool centering, c10::string_view layout) {
  // p = q = 2 is Parallel LN, whose own autograd kernel takes the call above autograd.
  if (p == 2.0 && q == 2.0) return parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
  if (autograd_support::route(fused_kernels_take(input, p), input, weight, bias) == Route::kBelowAutograd) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return pq_norm(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
  }
  return composite(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, q));
}

Tensor3 autograd_forward_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                                int64_t num_features, int64_t num_per_group, double eps, bool centering,
                                c10::string_view layout) {
  const auto outputs =
      ParallelLNFunction::apply(input, placeholder(weight, input), placeholder(bias, input), weight.has_value(),
                                bias.has_value(), num_features, num_per_group, eps, centering,
                                std::string(layout.data(), layout.size()));
  return {outputs[0], outputs[1], outputs[2]};
}

Tensor3 autograd_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                                 const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                                 int64_t num_per_group, double eps, bool centering, c10::string_view layout) {
  if (autograd_support::route(fused_kernels_take(input), grad_output, input, weight) == Route::kBelowAutograd) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return parallel_ln_backward(grad_output, input, mean, rstd, weight, num_features, num_per_group, eps, centering,
                                layout);
  }
  // A graph of the gradient (or its tangent) is wanted: the gradient's
  // formulation, which autograd differentiates (the statistics are recomputed
  // from the input).
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  auto [dx, dweight, dbias] =
      formulation::parallel_ln_gradient<AtenMaths>(grad_output, input, present(weight), grouping(spec));
  return {dx.contiguous(detail::output_format(input, spec.layout)), dweight, dbias};
}

// -------------------------------------------------------------- Autocast ---

at::Tensor autocast_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                           int64_t num_features, int64_t num_per_group, double eps, bool centering,
                           c10::string_view layout, double p) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_keys());
  return parallel_ln(input, autocast_param(weight, input), autocast_param(bias, input), num_features, num_per_group,
                     eps, centering, layout, p);
}

at::Tensor autocast_pq_kernel(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                              int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                              bool centering, c10::string_view layout) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_keys());
  return pq_norm(input, autocast_param(weight, input), autocast_param(bias, input), num_features, num_per_group, p,
                 q, eps, centering, layout);
}

}  // namespace

at::Tensor composite(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                     const ParallelNormSpec& spec) {
  const auto resolved = check_tensors(input, weight, bias, spec);
  return formulation::parallel_ln<AtenMaths>(input, present(weight), present(bias), grouping(resolved))
      .contiguous(detail::output_format(input, resolved.layout));
}

}  // namespace parallel_ln_op
}  // namespace pln::ops

// ------------------------------------------------------------ registration ---

namespace ln_op = pln::ops::parallel_ln_op;

TORCH_LIBRARY_FRAGMENT(pln, m) {
  namespace schema = pln::ops::schema;
  m.def(schema::kParallelLN);
  m.def(schema::kPQNorm);
  m.def(schema::kParallelLNForward);
  m.def(schema::kParallelLNBackward);
  m.def(schema::kParallelLNComposite);
}

TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("parallel_ln", TORCH_FN(ln_op::cpu_kernel));
  m.impl("parallel_ln_forward", TORCH_FN(ln_op::cpu_forward_kernel));
  m.impl("parallel_ln_backward", TORCH_FN(ln_op::cpu_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Meta, m) {
  m.impl("parallel_ln", TORCH_FN(ln_op::meta_kernel));
  m.impl("pq_norm", TORCH_FN(ln_op::meta_pq_kernel));
  m.impl("parallel_ln_forward", TORCH_FN(ln_op::meta_forward_kernel));
  m.impl("parallel_ln_backward", TORCH_FN(ln_op::meta_backward_kernel));
}

// Every other backend runs the composite formulation (and so does pq_norm beyond p = q = 2 on every one).
TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("parallel_ln", [](const at::Tensor& input, const pln::ops::OptionalTensor& weight,
                           const pln::ops::OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                           double eps, bool centering, c10::string_view layout, double p) {
    return ln_op::composite_kernel(input, weight, bias, num_features, num_per_group, p, p, eps, centering, layout);
  });
  m.impl("pq_norm", TORCH_FN(ln_op::pq_kernel));
}

TORCH_LIBRARY_IMPL(pln, CompositeImplicitAutograd, m) {
  m.impl("parallel_ln_composite", TORCH_FN(ln_op::composite_kernel));
}

TORCH_LIBRARY_IMPL(pln, Autograd, m) {
  m.impl("parallel_ln", TORCH_FN(ln_op::autograd_kernel));
  m.impl("pq_norm", TORCH_FN(ln_op::autograd_pq_kernel));
  m.impl("parallel_ln_forward", TORCH_FN(ln_op::autograd_forward_kernel));
  m.impl("parallel_ln_backward", TORCH_FN(ln_op::autograd_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, AutocastCPU, m) {
  m.impl("parallel_ln", TORCH_FN(ln_op::autocast_kernel));
  m.impl("pq_norm", TORCH_FN(ln_op::autocast_pq_kernel));
}
TORCH_LIBRARY_IMPL(pln, AutocastCUDA, m) {
  m.impl("parallel_ln", TORCH_FN(ln_op::autocast_kernel));
  m.impl("pq_norm", TORCH_FN(ln_op::autocast_pq_kernel));
}
