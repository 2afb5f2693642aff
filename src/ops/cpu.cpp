// CPU kernels of the pln operators: the fused kernels of src/cpu/ for float
// and double with p = 2, the composite ATen ops otherwise.

#include "ops/ops.h"

#include "cpu/kernels.h"
#include "layout.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

namespace pln::ops::cpu {

namespace {

at::Tensor weight_or_ones(const OptionalTensor& w, const at::Tensor& x, int64_t num_features) {
  return w.has_value() ? w->reshape({-1}).contiguous() : at::ones({num_features}, x.options());
}

at::Tensor bias_or_zeros(const OptionalTensor& b, const at::Tensor& x, int64_t num_features) {
  return b.has_value() ? b->reshape({-1}).contiguous() : at::zeros({num_features}, x.options());
}

void check_fused_dtype(const at::Tensor& x, const char* op) {
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble, op,
              ": the fused CPU kernels take float32 or float64 input, got ", x.scalar_type());
}

}  // namespace

// save_stats = false: nothing will be differentiated, so the per-group mean
// and 1/std are not written out.
Tensor3 fused_forward(const at::Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                      const ParallelNormSpec& spec, bool save_stats) {
  const detail::KernelView view =
      detail::kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  const auto& g = view.geometry;
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(view.format));
  at::Tensor mean, rstd;
  if (save_stats) {
    // [outer, groups, inner] in memory, shaped like x with groups for features.
    const auto shape = stats_shape(x, spec);
    mean = at::empty_symint(shape, x.options(), view.format);
    rstd = at::empty_symint(shape, x.options(), view.format);
  }
  const at::Tensor w = weight_or_ones(weight, x, spec.num_features);
  const at::Tensor b = bias_or_zeros(bias, x, spec.num_features);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_forward", [&] {
    pln::cpu::forward<scalar_t>(g, view.data.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                b.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                                save_stats ? mean.data_ptr<scalar_t>() : nullptr,
                                save_stats ? rstd.data_ptr<scalar_t>() : nullptr, spec.eps,
                                spec.centering);
  });
  return {y, mean, rstd};
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double eps, bool centering, c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout));
  check_fused_dtype(input, "pln::parallel_ln_forward");
  return fused_forward(input, weight, bias, spec, /*save_stats=*/true);
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input,
                             const at::Tensor& mean, const at::Tensor& rstd,
                             const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering,
                             c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  check_fused_dtype(input, "pln::parallel_ln_backward");
  const detail::KernelView view =
      detail::kernel_view(input, spec.layout, spec.num_features, spec.num_per_group);
  const at::Tensor dy = detail::conform(grad_output, view);
  const at::Tensor m = detail::conform(mean, view), r = detail::conform(rstd, view);
  const at::Tensor w = weight_or_ones(weight, input, spec.num_features);
  at::Tensor dx = at::empty(input.sizes(), input.options().memory_format(view.format));
  // Per-feature sums are accumulated in double whatever the input's dtype.
  at::Tensor dw = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  at::Tensor db = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "pln_parallel_ln_backward", [&] {
    pln::cpu::backward<scalar_t>(view.geometry, dy.data_ptr<scalar_t>(), view.data.data_ptr<scalar_t>(),
                                 m.data_ptr<scalar_t>(), r.data_ptr<scalar_t>(),
                                 w.data_ptr<scalar_t>(), spec.centering, dx.data_ptr<scalar_t>(),
                                 dw.data_ptr<double>(), db.data_ptr<double>());
  });
  return {dx, dw.to(input.scalar_type()), db.to(input.scalar_type())};
}

}  // namespace pln::ops::cpu
