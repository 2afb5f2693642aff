#pragma once
// Parallel LN on second-order Taylor jets, for physics-informed training.
//
// A jet holds, for every point, the values of C features together with their
// first and second derivatives along D input directions: shape
// [1 + 2D, ..., C], part 0 the values, parts 1..D the first derivatives
// d/dx_k, parts D+1..2D the second derivatives d2/dx_k2. parallel_ln_jet
// returns the jet of parallel_ln(x) (features on the last axis), so a network
// can carry u, grad u and the diagonal of its Hessian forward in one pass and
// a PDE loss needs one ordinary backward instead of differentiating the
// network twice.

#include <pln/options.h>
#include <torch/types.h>

namespace pln::functional {

/// The jet of Parallel LN (p = 2) of the jet `jet`. Features are the last axis
/// (options.dim() and layout are not consulted). `weight` scales every part and
/// `bias` shifts the values only; both hold C elements or are undefined.
///
/// CPU float/double input runs fused kernels in a custom autograd function
/// (twice differentiable through the composite formulas); other devices and
/// dtypes run the composite ATen formulas.
torch::Tensor parallel_ln_jet(const torch::Tensor& jet, const ParallelLNOptions& options,
                              const torch::Tensor& weight = {}, const torch::Tensor& bias = {});

}  // namespace pln::functional
