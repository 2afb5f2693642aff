#pragma once
// How a declared layout maps onto tensors: the composite path's features-last
// views and the fused kernels' [outer, C, inner] geometry.

#include <pln/options.h>
#include <torch/types.h>

#include "cpu/kernels.h"

#include <vector>

namespace pln::detail {

/// Checks x against the layout and feature count (num_features <= 0: any
/// width); errors name expected and actual values.
void check_input(const torch::Tensor& x, Layout layout, int64_t num_features);
/// Whether an affine parameter of type `param` goes with an input of type
/// `input`: the same type, float32 with a float16 or bfloat16 input (as
/// nn.LayerNorm takes them), or a narrower floating type, widened exactly.
bool param_type_fits(at::ScalarType param, at::ScalarType input);
/// Checks an affine parameter (`name` is "weight" or "bias") against x.
void check_param(const torch::Tensor& p, const char* name, const torch::Tensor& x,
                 int64_t num_features);
/// The checks of a parallel_ln call: the options, then x, weight and bias against them.
void check_call(const torch::Tensor& x, const ParallelLNOptions& options, const torch::Tensor& weight,
                const torch::Tensor& bias);

/// View of x with the feature axis last (a permutation, no copy).
torch::Tensor features_last(const torch::Tensor& x, Layout layout);
/// Inverse of features_last.
torch::Tensor features_restore(const torch::Tensor& y, Layout layout);
/// Shape broadcasting a [C] parameter along the feature axis of a layout.
std::vector<int64_t> param_shape(Layout layout, int64_t num_features);

/// The memory format of every output shaped like x: channels-last for a
/// channels-last NCHW input (whose groups the kernels then read contiguously),
/// contiguous otherwise.
c10::MemoryFormat output_format(const torch::Tensor& x, Layout layout);

/// x as the fused kernels see it: a tensor whose memory is [outer, C, inner]
/// contiguous (x itself when it already is, else a copy), plus the memory
/// format outputs must be allocated with to share that arrangement.
struct KernelView {
  torch::Tensor data;
  cpu::Geometry geometry;
  c10::MemoryFormat format;
};
KernelView kernel_view(const torch::Tensor& x, Layout layout, int64_t num_features,
                       int64_t num_per_group);
/// `t` (same logical shape as the viewed x) laid out like the view's data.
torch::Tensor conform(const torch::Tensor& t, const KernelView& view);

}  // namespace pln::detail
