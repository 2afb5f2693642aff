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
//   composite.cpp CompositeExplicitAutograd: the composite ATen formulation (any p, any
//                 device, differentiable to any order), for devices without fused kernels
//   meta.cpp      Meta: shapes, dtypes and strides only (FakeTensor, torch.compile, torch.export)
//   autograd.cpp  Autograd: the custom function over the forward and backward ops
//   autocast.cpp  AutocastCPU/AutocastCUDA: affine parameters cast to the input's dtype
//
// The functions below call the operators through the dispatcher, so C++
// callers take the same path as torch.ops.pln.

#include <pln/options.h>

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace pln::ops {

/// One call's scalar arguments, checked: the grouping, eps, centering, layout
/// and exponents of a parallel (per-group, per-position) normalisation.
struct ParallelNormSpec {
  /// The feature count; after checked_spec, a value <= 0 (kInputWidth) stands
  /// for "the input's width", which check_tensors resolves.
  int64_t num_features;
  int64_t num_per_group;
  double eps;
  bool centering;
  Layout layout;
  double p = 2.0;
  double q = 2.0;  ///< numerator exponent p / q and root 1 / q (PQNorm); q = p is PLN
};

/// num_features at or below this (0, -1, ...) means "the input's width": the
/// operators then run on whatever slice of the features they are given, as on
/// a rank's shard under tensor parallelism, provided it holds whole groups.
/// A positive num_features must still equal the input's width.
inline constexpr int64_t kInputWidth = 0;

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
/// float for float16/bfloat16/float32 input, shaped like the input with the
/// feature axis replaced by the groups (stats_shape): [N, groups] for nc,
/// [N, T, groups] for ntc, [N, groups, H, W] for nchw (channels-last strides
/// for a channels-last input), [N, H, W, groups] for nhwc, [N, groups, L] for
/// ncl. That is the fused kernels' memory order, and a sharding of the input
/// (rows, positions, or features in whole groups) describes it unchanged.
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

/// A device's fused forward (cpu.cpp, cuda.cpp): y, and the statistics a
/// backward reads when save_stats.
using FusedForwardFn = Tensor3(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                               const ParallelNormSpec& spec, bool save_stats);

// Calls through the dispatcher.
ParallelLNFn parallel_ln;
PQNormFn pq_norm;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;

// Kernels, by dispatch key.
// The CPU and CUDA keys' parallel_ln is fused_or_composite<their fused_forward> (below).
namespace cpu {
FusedForwardFn fused_forward;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace cpu
namespace cuda {  // built with CUDA only (PLN_WITH_CUDA)
FusedForwardFn fused_forward;
ParallelLNForwardFn parallel_ln_forward;
ParallelLNBackwardFn parallel_ln_backward;
}  // namespace cuda
namespace composite {
ParallelLNFn parallel_ln;
PQNormFn pq_norm;

/// The composite ATen formulation: differentiable to any order, on any device.
at::Tensor forward(const at::Tensor& x, const ParallelNormSpec& spec, const at::Tensor& weight,
                   const at::Tensor& bias);
/// forward after check_tensors: what autograd runs where the fused kernels do not.
at::Tensor checked_forward(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                           const ParallelNormSpec& spec);
struct Gradients {
  at::Tensor dx, dweight, dbias;
};
/// dweight and dbias come back as [C]. Analytic p = 2 gradients written with
/// differentiable ops, so that a create_graph backward through the fused op can
/// itself be differentiated.
Gradients backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& weight,
                   const ParallelNormSpec& spec, bool want_dx, bool want_dweight, bool want_dbias);
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
// The autocast keys, which each autocast kernel excludes before it calls on.
c10::DispatchKeySet keys();
}  // namespace autocast
namespace gated {  // gated.cpp: pln::gated_norm through the dispatcher
at::Tensor gated_norm(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation);
}  // namespace gated

// ------------------------------------------------------------------ shared ---

/// The schema's scalar arguments as a spec, checked (c10::Error naming the bad value).
ParallelNormSpec checked_spec(int64_t num_features, int64_t num_per_group, double eps, bool centering,
                              c10::string_view layout, double p = 2.0, double q = 2.0);
/// Checks input, weight and bias against the spec; symbolic sizes are fine
/// (except a symbolic width where num_features is kInputWidth: it is
/// specialised). Returns the spec with num_features resolved: the input's
/// width, which must be a positive multiple of the group size.
ParallelNormSpec check_tensors(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                               ParallelNormSpec spec);
/// Checks the backward's tensors: grad_output like input, the forward's
/// statistics (stats_shape), weight. Returns the spec resolved as check_tensors does.
ParallelNormSpec check_backward_tensors(const at::Tensor& grad_output, const at::Tensor& input,
                                        const at::Tensor& mean, const at::Tensor& rstd,
                                        const OptionalTensor& weight, ParallelNormSpec spec);
/// Shape of the saved statistics: the input's, with the feature axis holding
/// the groups (num_features / num_per_group) instead of the features.
c10::SymDimVector stats_shape(const at::Tensor& input, const ParallelNormSpec& spec);
/// dtype of the mean and rstd the forward saves.
at::ScalarType stats_type(at::ScalarType input);
/// Whether fused kernels take this input (device, dtype, p): CPU float32 and
/// float64; CUDA float16, bfloat16, float32 and float64 once enabled.
bool has_fused_kernels(const at::Tensor& input, double p);
/// Whether the fused CUDA kernels are built and enabled (PLN_CUDA_KERNELS=1).
bool cuda_kernels_enabled();

at::Tensor value_or_undefined(const OptionalTensor& t);
OptionalTensor defined_or_none(const at::Tensor& t);

/// pln::parallel_ln at the key of a device with fused kernels: `fused` where
/// has_fused_kernels takes the input, the composite ATen ops otherwise. (Above
/// autograd, autograd.cpp chooses between the fused forward op and the
/// composite formulation by the same test.)
template <FusedForwardFn* fused>
at::Tensor fused_or_composite(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                              int64_t num_features, int64_t num_per_group, double eps, bool centering,
                              c10::string_view layout, double p) {
  if (!has_fused_kernels(input, p)) {
    return composite::parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
  }
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout, p));
  return std::get<0>(fused(input, weight, bias, spec, /*save_stats=*/false));
}

}  // namespace pln::ops
