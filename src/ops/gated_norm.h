#pragma once
// The gated norm's checked arguments and the pieces its kernels share across
// devices: gated_norm.cpp holds the op (ops.h's shape), cuda.cpp its CUDA
// kernels (built with CUDA).

#include "ops/ops.h"

#include "cpu/gated_kernels.h"

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace pln::ops::gated_norm_op {

struct Spec {
  int64_t num_features, num_per_group;
  double eps;
  bool centering, gate_before, sigmoid;
  int64_t groups() const { return num_features / num_per_group; }
};

/// The scalar arguments and the tensors, checked; errors name the bad value.
Spec checked(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
             const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps, bool centering,
             c10::string_view gate_position, c10::string_view activation);

/// A backward's tensors against the input: grad_output like it, the forward's statistics one per group.
void check_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                    const at::Tensor& rstd, const Spec& s);

/// The weight (or bias) as C contiguous values of `options` (dtype and device), or C values of `fill`.
at::Tensor ones_or(const OptionalTensor& w, const at::TensorOptions& options, int64_t c, double fill);

/// The kernels' view of x: rows of C features.
pln::cpu::gated::Shape shape_of(const at::Tensor& x, const Spec& s);

/// The composite ATen formulation of pln::gated_norm, for any device and dtype.
at::Tensor composite_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                            bool centering, c10::string_view gate_position, c10::string_view activation);

}  // namespace pln::ops::gated_norm_op
