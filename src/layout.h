#pragma once
// How a declared layout maps onto tensors: a call's checks, and the fused
// kernels' [outer, C, inner] geometry and output format.

#include <pln/options.h>
#include <torch/types.h>

#include "cpu/kernels.h"

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
