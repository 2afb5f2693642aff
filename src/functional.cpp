// include/pln/functional.h: pln::functional::parallel_ln and pq_norm, the C++
// face of the pln operators (src/ops/), called through the dispatcher as
// torch.ops.pln is.

#include <pln/functional.h>

#include "layout.h"
#include "ops/ops.h"

namespace pln {
namespace functional {

torch::Tensor parallel_ln(const torch::Tensor& x, const ParallelLNOptions& options,
                          const torch::Tensor& weight, const torch::Tensor& bias) {
  // Checked here too, so that an undefined input is named as such rather than
  // reported by the dispatcher as a call without tensors.
  detail::check_call(x, options, weight, bias);
  return ops::parallel_ln(x, ops::defined_or_none(weight), ops::defined_or_none(bias),
                          options.num_features(), options.num_per_group(), options.eps(),
                          options.centering(), to_string(options.resolved_layout()), options.p());
}

torch::Tensor gated_norm(const torch::Tensor& x, const torch::Tensor& gate, const GatedNormOptions& options,
                         const torch::Tensor& weight, const torch::Tensor& bias) {
  TORCH_CHECK(x.defined() && gate.defined(), "pln: gated_norm's input and gate must be defined tensors");
  return ops::gated::gated_norm(x, gate, ops::defined_or_none(weight), ops::defined_or_none(bias),
                                options.num_features(), options.num_per_group(), options.eps(), options.centering(),
                                options.gate_position(), options.activation());
}

torch::Tensor pq_norm(const torch::Tensor& x, const PQNormOptions& options,
                      const torch::Tensor& weight, const torch::Tensor& bias) {
  options.validate();
  TORCH_CHECK(x.defined(), "pln: input tensor is undefined");
  return ops::pq_norm(x, ops::defined_or_none(weight), ops::defined_or_none(bias),
                      options.num_features(), options.num_per_group(), options.p(), options.q(),
                      options.eps(), options.centering(), to_string(options.resolved_layout()));
}

}  // namespace functional
}  // namespace pln
