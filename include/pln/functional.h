#pragma once
// Functional twins of the modules, as torch::nn::functional::layer_norm.

#include <pln/options.h>
#include <torch/arg.h>
#include <torch/types.h>

#include <string>

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

/// The gated norm of `x` (features last, any leading rank) with `gate` shaped
/// like it: the operator pln::gated_norm (fused CPU kernels for float and
/// double, the composite ATen formulation elsewhere).
torch::Tensor gated_norm(const torch::Tensor& x, const torch::Tensor& gate, const GatedNormOptions& options,
                         const torch::Tensor& weight = {}, const torch::Tensor& bias = {});

/// PQNorm of `x`: the operator pln::pq_norm (composite implementation; p = q = 2
/// runs parallel_ln).
torch::Tensor pq_norm(const torch::Tensor& x, const PQNormOptions& options,
                      const torch::Tensor& weight = {}, const torch::Tensor& bias = {});

}  // namespace pln::functional
