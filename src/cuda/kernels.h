#pragma once
// Fused CUDA kernels of Parallel LN (p = 2), on the [outer, C, inner] view of
// the CPU kernels (cpu/kernels.h): inner = 1 for every features-last layout
// (a group is g contiguous values), inner = H*W for NCHW (a group's values
// lie a plane apart). float16 and bfloat16 accumulate in float, float32 in
// float, float64 in double; mean and rstd are kept in that accumulation type.
//
// Math, per group x_1..x_g, exact at any common offset as on the CPU (the
// group's values are held in registers, or re-read from cache for groups too
// large for them):
//   s    = x_1                               (the shift; 0 without centering)
//   d    = x - s                             (exact when x and s are close)
//   m    = sum(d) / g                        (0 without centering)
//   rstd = 1 / sqrt(sum((d - m)^2) / g + eps)
//   y    = (d - m) * rstd * w[c] + b[c],     mean = s + m (saved, rounded)
// Backward, re-centred on the saved mean's rounding: with d = x - mean,
// b = mean(d) (0 but for that rounding; 0 without centering),
// xhat = (d - b) * rstd and gy = w[c] * dy,
//   dx   = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))   (no mean(gy) term without centering)
//   mean(gy * xhat) = rstd * (sum(gy * d) - b * sum(gy)) / g
//   dw[c] = sum over groups of dy * xhat,  db[c] = sum of dy
// One pass over x and dy: the dx kernel also accumulates each block's
// dw and db partial sums (in registers, or in its own workspace row for large
// groups), written once per block; a small kernel then sums the blocks'
// partials in a fixed order: deterministic, no atomics.
//
// The functions launch on `stream` and return at once; a CUDA error is
// raised as c10::Error by the caller's check (last_error).
//
// The same source compiles with nvcc for the GPU and, through HIP-CPU
// (src/cuda/runtime.h), with the host compiler for the CPU-run tests; the two
// builds live in different inline namespaces so that a program may hold both.

#include "cpu/kernels.h"

#include <cstdint>

#if defined(PLN_CUDA_ON_HIP_CPU)
#define PLN_CUDA_BUILD hip_cpu
#else
#define PLN_CUDA_BUILD device
#endif

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {

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

/// `workspace` holds workspace_elements(g) accumulation values; dweight and
/// dbias are [C], both null when they are not wanted (then the dx kernel
/// accumulates no partial sums and nothing else runs).
template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const typename Acc<T>::type* mean,
              const typename Acc<T>::type* rstd, const T* weight, bool centering, T* dx,
              typename Acc<T>::type* dweight, typename Acc<T>::type* dbias,
              typename Acc<T>::type* workspace, void* stream);

/// Accumulation values backward's workspace needs for this geometry.
int64_t workspace_elements(const Geometry& g);

/// The last CUDA error as text, or "" when there is none (and clears it).
const char* last_error();

/// Waits for the work launched on `stream`; returns last_error().
const char* synchronize(void* stream);

}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
