// include/pln/testing.h: the test hooks (the composite path the fused kernels
// are checked against, and which path a call takes). The jets' composite is in
// functional.cpp, beside the jets' functional.

#include <pln/testing.h>

#include "layout.h"
#include "ops/ops.h"

namespace pln::detail {

bool uses_fused_kernels(const torch::Tensor& x, const ParallelLNOptions& options) {
  return ops::fused_kernels_take(x, options.p());
}

torch::Tensor parallel_ln_composite(const torch::Tensor& x, const ParallelLNOptions& options,
                                    const torch::Tensor& weight, const torch::Tensor& bias) {
  check_call(x, options, weight, bias);
  const ops::ParallelNormSpec spec{options.num_features(), options.num_per_group(), options.eps(),
                                   options.centering(),    options.resolved_layout(), options.p(),
                                   options.p()};
  return ops::parallel_ln_op::composite(x, ops::defined_or_none(weight), ops::defined_or_none(bias), spec);
}

}  // namespace pln::detail
