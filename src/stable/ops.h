#pragma once
// The kernels of the operators over the stable ABI (src/ops/schemas.h's
// schemas), registered by library.cpp.

#include "stable/tensors.h"

#include <string>
#include <tuple>

namespace pln::stable {

// The op on the CPU: the fused kernels for floating-point input and p = 2
// (no statistics kept), the composite formulation otherwise.
Tensor parallel_ln(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias, int64_t num_features,
                   int64_t num_per_group, double eps, bool centering, std::string layout, double p);
Tensor gated_norm(const Tensor& input, const Tensor& gate, const OptionalTensor& weight, const OptionalTensor& bias,
                  int64_t num_features, int64_t num_per_group, double eps, bool centering, std::string gate_position,
                  std::string activation);

std::tuple<Tensor, Tensor, Tensor> parallel_ln_forward(const Tensor& input, const OptionalTensor& weight,
                                                       const OptionalTensor& bias, int64_t num_features,
                                                       int64_t num_per_group, double eps, bool centering,
                                                       std::string layout);
std::tuple<Tensor, Tensor, Tensor> parallel_ln_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& mean, const Tensor& rstd,
                                                        const OptionalTensor& weight, int64_t num_features,
                                                        int64_t num_per_group, double eps, bool centering,
                                                        std::string layout);
std::tuple<Tensor, Tensor, Tensor> gated_norm_forward(const Tensor& input, const Tensor& gate,
                                                      const OptionalTensor& weight, const OptionalTensor& bias,
                                                      int64_t num_features, int64_t num_per_group, double eps,
                                                      bool centering, std::string gate_position,
                                                      std::string activation);
std::tuple<Tensor, Tensor, Tensor, Tensor> gated_norm_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& gate, const Tensor& mean, const Tensor& rstd,
    const OptionalTensor& weight, const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
    bool centering, std::string gate_position, std::string activation);

// The composite formulations (ops/formulation.h) after the checks, which
// python/pln/_stable_ops.py makes (CompositeImplicitAutograd).
Tensor parallel_ln_formulation(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                               int64_t axis, int64_t num_per_group, double p, double q, double eps, bool centering);
std::tuple<Tensor, Tensor, Tensor> parallel_ln_gradient_formulation(const Tensor& grad_output, const Tensor& input,
                                                                    const OptionalTensor& weight, int64_t axis,
                                                                    int64_t num_per_group, double eps,
                                                                    bool centering);
Tensor gated_norm_formulation(const Tensor& input, const Tensor& gate, const OptionalTensor& weight,
                              const OptionalTensor& bias, int64_t num_per_group, double eps, bool centering,
                              bool gate_before, bool sigmoid);
std::tuple<Tensor, Tensor, Tensor, Tensor> gated_norm_gradient_formulation(
    const Tensor& grad_output, const Tensor& input, const Tensor& gate, const OptionalTensor& weight,
    const OptionalTensor& bias, int64_t num_per_group, double eps, bool centering, bool gate_before, bool sigmoid);

}  // namespace pln::stable
