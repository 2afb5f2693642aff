#pragma once
// Activations on second-order Taylor jets, the layout of <pln/jet.h>: a jet
// [1 + 2D, ...] holds values z, their first derivatives z'_k along D
// directions, then their second derivatives z''_k. activation_jet returns the
// jet of phi(z) by the chain rule, elementwise:
//
//   phi(z),   phi'(z) z'_k,   phi''(z) z'_k^2 + phi'(z) z''_k
//
// so that a network without a norm carries u, grad u and the diagonal of its
// Hessian forward as a PLN-Net does through parallel_ln_jet.

#include <torch/types.h>

#include <string>

namespace pln {

/// The activations activation_jet computes.
enum class Activation {
  kTanh,
  kSat,      ///< x / sqrt(1 + x^2)
  kRelu,     ///< max(x, 0), whose derivative is taken as 0 at 0
  kSilu,     ///< x sigmoid(x)
  kSigmoid,
};

/// "tanh", "sat", "relu", "silu" or "sigmoid"; another name is a c10::Error naming it.
Activation activation_from_name(const std::string& name);

}  // namespace pln

namespace pln::functional {

/// The jet of act(z) for a jet `jet` [1 + 2D, ...] (any trailing shape).
///
/// Calls the operator pln::activation_jet (torch.ops.pln.activation_jet):
/// float and double jets on the CPU run fused kernels (one pass over the jet
/// forward, one backward), twice differentiable through the composite
/// formulas; on CUDA the fused CUDA kernels where they are enabled
/// (PLN_CUDA_KERNELS=1); other devices and dtypes run the composite formulas.
torch::Tensor activation_jet(const torch::Tensor& jet, Activation act);

}  // namespace pln::functional
