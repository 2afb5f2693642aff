#pragma once
// The operators pln registers with PyTorch's dispatcher (schemas in
// registration.cpp), and the kernels behind them, one file per dispatch key:
//
//   pln::parallel_ln           the public op: y = PLN(x) (any p, any device, any float dtype)
//   pln::pq_norm               the public op: PQNorm (p = q = 2 runs parallel_ln)
//   pln::parallel_ln_forward   y plus the per-group mean and 1/std a backward reads (p = 2, fused kernels)
//   pln::parallel_ln_backward  dx, dweight, dbias from those statistics (p = 2, fused kernels)
//
//   cpu.cpp       CPU: the fused kernels (src/cpu/), composite ATen ops where none apply
//   cuda.cpp      CUDA: the fused kernels (src/cuda/), built with a CUDA LibTorch and nvcc
//   composite.cpp CompositeExplicitAutograd: the composite ATen ops, for devices without fused kernels
//   meta.cpp      Meta: shapes, dtypes and strides only (FakeTensor, torch.compile, torch.export)
//   autograd.cpp  Autograd: the custom function over the forward and backward ops
//   autocast.cpp  AutocastCPU/AutocastCUDA: affine parameters cast to the input's dtype
//
// The functions below call the operators through the dispatcher, so C++
// callers take the same path as torch.ops.pln.

#include "composite.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace pln::ops {

using OptionalTensor = c10::optional<at::Tensor>;
using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// The operators' C++ signatures, as their schemas in registration.cpp give them.
using ParallelLNFn = at::Tensor(const at::Tensor& input, const OptionalTensor& weight,
                                const OptionalTensor& bias, int64_t num_features,
                                int64_t num_per_group, double eps, bool centering,
                                c10::string_view layout, double p);
using PQNormFn = at::Tensor(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double p, double q, double eps, bool centering, c10::string_view layout);
/// (output, mean, rstd); mean and rstd hold one value per normalised group, in
/// the fused kernels' order, in float for float16/bfloat16/float32 input.
using ParallelLNForwardFn = Tensor3(const at::Tensor& input, const OptionalTensor& weight,
                                    const OptionalTensor& bias, int64_t num_features,
                                    int64_t num_per_group, double eps, bool centering,
                                    c10::string_view layout);
/// (grad_input, grad_weight [C], grad_bias [C]); grad_weight is computed with
/// unit weights when `weight` is absent.
using ParallelLNBackwardFn = Tensor3(const at::Tensor& grad_output, const at::Tensor& input,
                                     const at::Tensor& mean, const at::Tensor& rstd,
                                     const OptionalTensor& weight, int64_t num_features,
                                     int64_t num_per_group, double eps, bool centering,
                                     c10::string_view layout);

// Calls through the dispatcher.
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;

// Kernels, by dispatch key.
namespace cpu {
ParallelLNFn parallel_ln;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace cpu
namespace cuda {  // built with CUDA only (PLN_WITH_CUDA)
ParallelLNFn parallel_ln;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace cuda
namespace composite {
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
}  // namespace composite
namespace meta {
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace meta
namespace autograd {
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace autograd
namespace autocast {
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
}  // namespace autocast

// ------------------------------------------------------------------ shared ---

/// The schema's scalar arguments as a spec, checked (c10::Error naming the bad value).
detail::GroupNormSpec checked_spec(int64_t num_features, int64_t num_per_group, double eps,
                                   bool centering, c10::string_view layout, double p = 2.0,
                                   double q = 2.0);
/// Checks input, weight and bias against the spec; symbolic sizes are fine.
void check_tensors(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   const detail::GroupNormSpec& spec);
/// Checks the backward's tensors: grad_output like input, the forward's statistics, weight.
void check_backward_tensors(const at::Tensor& grad_output, const at::Tensor& input,
                            const at::Tensor& mean, const at::Tensor& rstd,
                            const OptionalTensor& weight, const detail::GroupNormSpec& spec);
/// dtype of the mean and rstd the forward saves.
at::ScalarType stats_type(at::ScalarType input);
/// Whether fused kernels take this input (device, dtype, p): CPU float32 and
/// float64; CUDA float16, bfloat16, float32 and float64 once enabled.
bool has_fused_kernels(const at::Tensor& input, double p);
/// Whether the fused CUDA kernels are built and enabled (PLN_CUDA_KERNELS=1).
bool cuda_kernels_enabled();

at::Tensor value_or_undefined(const OptionalTensor& t);
OptionalTensor defined_or_none(const at::Tensor& t);

}  // namespace pln::ops
