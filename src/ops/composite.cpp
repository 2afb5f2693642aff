// CompositeExplicitAutograd kernels: the composite ATen ops, for every device
// without fused kernels (and for inputs the fused kernels do not take). They
// run below autograd; autograd.cpp gives them their gradients.

#include "ops/ops.h"

#include "layout.h"

namespace pln::ops::composite {

namespace {

at::Tensor run(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
               const detail::GroupNormSpec& spec) {
  check_tensors(input, weight, bias, spec);
  // The same strides as the fused kernels' outputs, which the Meta kernels promise.
  return detail::composite_forward(input, spec, value_or_undefined(weight), value_or_undefined(bias))
      .contiguous(detail::output_format(input, spec.layout));
}

}  // namespace

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  return run(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, p));
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                   bool centering, c10::string_view layout) {
  const auto spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, q);
  if (p == 2.0 && q == 2.0) {
    return ops::parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
  }
  return run(input, weight, bias, spec);
}

}  // namespace pln::ops::composite
