#pragma once
// Fused CUDA kernels of Parallel LN (p = 2), on the [outer, C, inner] view of
// the CPU kernels (cpu/kernels.h): inner = 1 for every features-last layout
// (a group is g contiguous values), inner = H*W for NCHW (a group's values
// lie a plane apart). float16 and bfloat16 accumulate in float, float32 in
// float, float64 in double; mean and rstd are kept in that accumulation type.
//
// Math, per group x_1..x_g (two passes from registers, so no cancellation):
//   mean = sum(x) / g                       (0 without centering)
//   rstd = 1 / sqrt(sum((x - mean)^2) / g + eps)
//   y    = (x - mean) * rstd * w[c] + b[c]
// Backward, with xhat = (x - mean) * rstd and gy = w[c] * dy:
//   dx   = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))   (no mean(gy) term without centering)
//   dw[c] = sum over groups of dy * xhat,  db[c] = sum of dy
// dw and db are reduced deterministically: per-block partial sums in the
// accumulation type, then a fixed-order sum over the blocks.
//
// The functions launch on `stream` and return at once; a CUDA error is
// raised as c10::Error by the caller's check (cuda_check).

#include "cpu/kernels.h"

#include <cstdint>

namespace pln::cuda {

using Geometry = pln::cpu::Geometry;

/// The 16-bit element types, as the kernels' callers hold them (at::Half and
/// at::BFloat16 have the same two-byte layout).
struct alignas(2) half_t {
  uint16_t bits;
};
struct alignas(2) bfloat16_t {
  uint16_t bits;
};

/// The accumulation type of T: float for float16, bfloat16 and float32; double for double.
template <typename T>
struct Acc {
  using type = float;
};
template <>
struct Acc<double> {
  using type = double;
};

/// `mean`/`rstd` may both be null (nothing will be differentiated).
template <typename T>
void forward(const Geometry& g, const T* x, const T* weight, const T* bias, T* y,
             typename Acc<T>::type* mean, typename Acc<T>::type* rstd, double eps, bool centering,
             void* stream);

/// `workspace` holds workspace_elements(g) accumulation values; dweight and dbias are [C].
template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const typename Acc<T>::type* mean,
              const typename Acc<T>::type* rstd, const T* weight, bool centering, T* dx,
              typename Acc<T>::type* dweight, typename Acc<T>::type* dbias,
              typename Acc<T>::type* workspace, void* stream);

/// Accumulation values backward's workspace needs for this geometry.
int64_t workspace_elements(const Geometry& g);

/// The last CUDA error as text, or "" when there is none (and clears it).
const char* last_error();

}  // namespace pln::cuda
