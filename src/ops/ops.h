#pragma once
// The operators pln registers with PyTorch's dispatcher. Every op has the same
// shape, one file a family, the same sections in the same order:
//
//   parallel_ln.cpp  pln::parallel_ln, pq_norm, parallel_ln_forward, parallel_ln_backward
//   gated_norm.cpp   pln::gated_norm, gated_norm_forward, gated_norm_backward
//   jet.cpp          pln::parallel_ln_jet, parallel_ln_jet_backward
//   activation_jet.cpp  pln::activation_jet, activation_jet_backward
//
//   the checks        the schema's arguments, checked, as a spec
//   composite         the formulation in ATen ops (any p, device and dtype,
//                     differentiable to any order): the reference the kernels
//                     are tested against, and what runs where they do not
//   CPU               the fused kernels of src/cpu/ (cpu_capability.cpp picks
//                     the capability), or the composite where they do not take
//                     the input; cuda.cpp holds every op's CUDA kernels
//   Meta              shapes, dtypes and strides (FakeTensor, torch.compile, export)
//   Autograd          a Function over the forward and backward ops where the
//                     fused kernels take the call, the composite recorded by
//                     autograd otherwise (and for forward-mode tangents)
//   Autocast          the input keeps its dtype
//   registration      the schemas (TORCH_LIBRARY_FRAGMENT) and the kernel of
//                     every dispatch key (library.cpp opens the library)
//
// "Fused or composite?" is one predicate for every op and device,
// fused_kernels_take below, and one route through autograd
// (autograd_support.h); the composite formulations are written once, for
// both libraries (formulation.h).
// The functions below call the operators through the dispatcher, so C++
// callers take the same path as torch.ops.pln.

#include <pln/options.h>

#include "ops/checks.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace pln::ops {

using OptionalTensor = c10::optional<at::Tensor>;
using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Tensor4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

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

using checks::kInputWidth;

// ------------------------------------------------ calls through the dispatcher ---

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p);
at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps, bool centering,
                   c10::string_view layout);
/// (output, mean, rstd); mean and rstd hold one value per normalised group, in
/// float for float16/bfloat16/float32 input, shaped like the input with the
/// feature axis replaced by the groups (stats_shape): [N, groups] for nc,
/// [N, T, groups] for ntc, [N, groups, H, W] for nchw (channels-last strides
/// for a channels-last input), [N, H, W, groups] for nhwc, [N, groups, L] for
/// ncl. That is the fused kernels' memory order, and a sharding of the input
/// (rows, positions, or features in whole groups) describes it unchanged.
Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double eps, bool centering,
                            c10::string_view layout);
/// (grad_input, grad_weight [C], grad_bias [C]), the parameters' gradients in
/// the weight's dtype (the input's without one, computed with unit weights).
Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                             const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering, c10::string_view layout);
at::Tensor gated_norm(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation);
/// The jet [1 + 2D, ..., C] of Parallel LN without affine (see include/pln/jet.h).
at::Tensor parallel_ln_jet(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering);
/// The jet [1 + 2D, ...] of an activation (see include/pln/activation_jet.h).
at::Tensor activation_jet(const at::Tensor& jet, c10::string_view activation);

// -------------------------------------------------------------- shared ---

/// A registered operator of pln, found once.
template <typename Fn>
c10::TypedOperatorHandle<Fn> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

/// Whether the fused kernels of the input's device take it (layout, dtype, p),
/// for every op: on the CPU float32, float64, float16 and bfloat16 strided
/// tensors with p = 2 (float16 and bfloat16 where half_types: the jets'
/// kernels compute in double and take float32 and float64 only); on CUDA the
/// same, once enabled (PLN_CUDA_KERNELS=1).
bool fused_kernels_take(const at::Tensor& input, double p = 2.0, bool half_types = true);
/// Whether the fused CUDA kernels are built and enabled (PLN_CUDA_KERNELS=1).
bool cuda_kernels_enabled();

/// The type the kernels and the composite formulation compute in, and keep
/// the statistics in: float for float16 and bfloat16, else the input's.
at::ScalarType stats_type(at::ScalarType input);
/// `t` in the compute type of an input of type `input` (undefined stays undefined).
at::Tensor in_compute_type(const at::Tensor& t, at::ScalarType input);

/// The groups of `grouped` (the last axis) less their means, shifted first
/// (formulation::centred, which says why): the jets' composite formulation.
at::Tensor centred(const at::Tensor& grouped);

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

at::Tensor value_or_undefined(const OptionalTensor& t);
OptionalTensor defined_or_none(const at::Tensor& t);

/// The autocast keys, which each autocast kernel excludes before it calls on.
c10::DispatchKeySet autocast_keys();
/// An affine parameter as an autocast kernel passes it on: as it is where the
/// kernels take it with the input (param_type_fits), else in the input's compute type.
OptionalTensor autocast_param(const OptionalTensor& t, const at::Tensor& input);

// -------------------------------------------- the composites, for other files ---
// (cuda.cpp and the test hooks; gated_norm.h has the gated norm's)

namespace parallel_ln_op {
/// The composite formulation after the checks, in the fused kernels' output
/// format (detail::output_format), as the Meta kernels promise.
at::Tensor composite(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                     const ParallelNormSpec& spec);
}  // namespace parallel_ln_op

namespace jet_op {
/// The composite formulation after the checks (the jets' reference, pln/testing.h).
at::Tensor composite(const at::Tensor& jet, int64_t num_per_group, double eps, bool centering);
}  // namespace jet_op


}  // namespace pln::ops
