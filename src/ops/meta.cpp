// Meta kernels: the outputs' shapes, dtypes and strides, with the same checks
// as the real kernels and no data. FakeTensor runs them, so torch.compile and
// torch.export trace the operators without touching memory. Sizes are SymInts
// throughout (dynamic shapes): nothing here may read a concrete size.

#include "ops/ops.h"

#include "layout.h"

#include <ATen/ATen.h>

namespace pln::ops::meta {

namespace {

at::Tensor like_input(const at::Tensor& input, Layout layout) {
  return at::empty_like(input, input.options(), detail::output_format(input, layout));
}

}  // namespace

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout, p));
  return like_input(input, spec.layout);
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                   bool centering, c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout, p, q));
  return like_input(input, spec.layout);
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double eps, bool centering, c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout));
  // The fused kernels' order: [outer, groups, inner], or positions-major for a
  // channels-last input, which the same memory format gives the statistics.
  const auto stats = input.options().dtype(stats_type(input.scalar_type()));
  const auto shape = stats_shape(input, spec);
  const auto format = detail::output_format(input, spec.layout);
  return {like_input(input, spec.layout), at::empty_symint(shape, stats, format),
          at::empty_symint(shape, stats, format)};
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input,
                             const at::Tensor& mean, const at::Tensor& rstd,
                             const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering,
                             c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  return {like_input(input, spec.layout), at::empty({spec.num_features}, input.options()),
          at::empty({spec.num_features}, input.options())};
}

}  // namespace pln::ops::meta
