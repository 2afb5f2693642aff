// The shared composite formulations (ops/formulation.h) over the stable ABI's
// maths, as ops of their own.

#include "ops/formulation.h"

#include "stable/maths.h"
#include "stable/ops.h"

namespace pln::stable {

Tensor parallel_ln_formulation(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                               int64_t axis, int64_t num_per_group, double p, double q, double eps, bool centering) {
  return formulation::parallel_ln<StableMaths>(input, present(weight), present(bias),
                                               {axis, num_per_group, eps, centering, p, q});
}

std::tuple<Tensor, Tensor, Tensor> parallel_ln_gradient_formulation(const Tensor& grad_output, const Tensor& input,
                                                                    const OptionalTensor& weight, int64_t axis,
                                                                    int64_t num_per_group, double eps,
                                                                    bool centering) {
  return formulation::parallel_ln_gradient<StableMaths>(grad_output, input, present(weight),
                                                        {axis, num_per_group, eps, centering});
}

Tensor gated_norm_formulation(const Tensor& input, const Tensor& gate, const OptionalTensor& weight,
                              const OptionalTensor& bias, int64_t num_per_group, double eps, bool centering,
                              bool gate_before, bool sigmoid) {
  return formulation::gated_norm<StableMaths>(input, gate, present(weight), present(bias),
                                              {num_per_group, eps, centering, gate_before, sigmoid});
}

std::tuple<Tensor, Tensor, Tensor, Tensor> gated_norm_gradient_formulation(
    const Tensor& grad_output, const Tensor& input, const Tensor& gate, const OptionalTensor& weight,
    const OptionalTensor& bias, int64_t num_per_group, double eps, bool centering, bool gate_before, bool sigmoid) {
  return formulation::gated_norm_gradient<StableMaths>(grad_output, input, gate, present(weight), present(bias),
                                                       {num_per_group, eps, centering, gate_before, sigmoid});
}

}  // namespace pln::stable
