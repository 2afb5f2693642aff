#pragma once
// Composite ATen formulations: differentiable to any order, on any device.

#include <pln/options.h>
#include <torch/types.h>

namespace pln::detail {

struct GroupNormSpec {
  int64_t num_features;
  int64_t num_per_group;
  double eps;
  bool centering;
  Layout layout;
  double p = 2.0;
  double q = 2.0;  ///< numerator exponent p / q and root 1 / q (PQNorm); q = p is PLN
};

torch::Tensor composite_forward(const torch::Tensor& x, const GroupNormSpec& spec,
                                const torch::Tensor& weight, const torch::Tensor& bias);

struct Gradients {
  torch::Tensor dx, dweight, dbias;
};
/// dweight and dbias come back as [C]. Analytic p = 2 gradients written with differentiable ops, so that a
/// create_graph backward through the fused op can itself be differentiated.
Gradients composite_backward(const torch::Tensor& dy, const torch::Tensor& x,
                             const torch::Tensor& weight, const GroupNormSpec& spec,
                             bool want_dx, bool want_dweight, bool want_dbias);

}  // namespace pln::detail
