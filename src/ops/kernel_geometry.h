#pragma once
// How the fused kernels see an input, from its sizes alone, for both
// registrations (libpln's layout.cpp, libpln_stable's parallel_ln.cpp): the
// [outer, C, inner] geometry of its memory, and whether they read it as it is,
// channels-last.

#include <pln/layout.h>

#include <cstdint>

#include "cpu/kernels.h"

namespace pln::ops {

/// Whether the kernels read an input channels-last: an NCHW input stored
/// channels-last ([N, H, W, C] in memory) holds each pixel's groups
/// contiguously, so it is read, and its outputs are allocated, that way.
/// `contiguous()` and `channels_last()` answer for the input; each is asked
/// only when the answer matters (with symbolic sizes, an answer may add a guard).
template <class Contiguous, class ChannelsLast>
bool reads_channels_last(Layout layout, Contiguous contiguous, ChannelsLast channels_last) {
  return layout == Layout::kNCHW && !contiguous() && channels_last();
}

/// The geometry of an input of `sizes` (a container of int64_t) whose memory
/// is [outer, C, inner] contiguous, or channels-last where `channels_last`.
template <class Sizes>
cpu::Geometry kernel_geometry(const Sizes& sizes, Layout layout, int64_t num_features, int64_t num_per_group,
                              bool channels_last) {
  const int64_t axis = layouts::channel_axis(layout), dim = static_cast<int64_t>(sizes.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) {
    if (d < axis) outer *= sizes[static_cast<size_t>(d)];
    if (d > axis) inner *= sizes[static_cast<size_t>(d)];
  }
  if (channels_last) return {outer * inner, num_features, 1, num_per_group};
  return {outer, num_features, inner, num_per_group};
}

}  // namespace pln::ops
