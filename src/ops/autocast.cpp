// Autocast kernels of the pln operators (torch.autocast, and the image
// experiments' amp=bf16): the affine parameters follow the input's dtype, so
// a float16/bfloat16 activation runs the 16-bit kernels, which accumulate in
// float, with float32 parameters, whose gradients autograd returns in float32
// through the cast. (ATen's layer_norm instead runs in float32 under autocast;
// these kernels need not, as their statistics are float already.)

#include "ops/ops.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

namespace pln::ops::autocast {

namespace {

OptionalTensor like_input(const OptionalTensor& t, const at::Tensor& input) {
  if (!t.has_value() || !t->defined() || t->scalar_type() == input.scalar_type()) return t;
  return t->to(input.scalar_type());
}

}  // namespace

c10::DispatchKeySet keys() {
  return c10::DispatchKeySet({c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA});
}

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(keys());
  return ops::parallel_ln(input, like_input(weight, input), like_input(bias, input), num_features, num_per_group,
                          eps, centering, layout, p);
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps, bool centering,
                   c10::string_view layout) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(keys());
  return ops::pq_norm(input, like_input(weight, input), like_input(bias, input), num_features, num_per_group, p,
                      q, eps, centering, layout);
}

}  // namespace pln::ops::autocast
