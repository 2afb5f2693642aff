#pragma once
// Functional twins of the modules, as torch::nn::functional::layer_norm.

#include <pln/options.h>
#include <torch/types.h>

namespace pln::functional {

/// Parallel Layer Normalization of `x`. `weight` and `bias` hold C elements
/// (shape [C] or the original module's broadcast shape) or are undefined.
///
/// Calls the registered operator pln::parallel_ln through the dispatcher, as
/// torch.ops.pln.parallel_ln does: on CPU float/double tensors with p = 2 the
/// fused kernels, through a custom autograd function that is twice
/// differentiable; elsewhere (other devices, dtypes or p) the composite ATen
/// implementation.
torch::Tensor parallel_ln(const torch::Tensor& x, const ParallelLNOptions& options,
                          const torch::Tensor& weight = {}, const torch::Tensor& bias = {});

/// PQNorm of `x`: the operator pln::pq_norm (composite implementation; p = q = 2
/// runs parallel_ln).
torch::Tensor pq_norm(const torch::Tensor& x, const PQNormOptions& options,
                      const torch::Tensor& weight = {}, const torch::Tensor& bias = {});

}  // namespace pln::functional

namespace pln::detail {

/// The composite ATen implementation (group view, mean, pow, rsqrt), differentiable
/// to any order on any device. It mirrors the original Python module's ops and
/// serves as the fallback path and as the benchmarks' "composed" reference.
torch::Tensor parallel_ln_composite(const torch::Tensor& x, const ParallelLNOptions& options,
                                    const torch::Tensor& weight = {},
                                    const torch::Tensor& bias = {});

/// Which path parallel_ln takes for these arguments (true: fused CPU kernels).
bool uses_fused_kernels(const torch::Tensor& x, const ParallelLNOptions& options);

/// The instruction set the fused CPU kernels run with: "avx512", "avx2" or "base", the
/// best this CPU supports unless the environment variable PLN_CPU_CAPABILITY
/// names one (any other value is a c10::Error).
const char* cpu_kernels();

}  // namespace pln::detail
