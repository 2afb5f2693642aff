#pragma once
// Fused CUDA kernels of the gated norm (src/ops/gated_norm.cpp), on the rows of
// the CPU kernels (cpu/gated_kernels.h): rows of C features, last axis, in
// groups of `group`, the gate z shaped like x.
//
//   gate before the norm (Mamba-2):      h = x * act(z), y = norm(h) * w + b
//   gate after the norm (Gated DeltaNet): h = x,          y = (norm(h) * w + b) * act(z)
//
// Per group, with the shift s = h_1 (0 without centering), as on the CPU:
//   mu   = s + sum(h - s) / g                    (0 without centering)
//   rstd = 1 / sqrt(sum((h - mu)^2) / g + eps),  n = (h - mu) * rstd
// Backward, with dt = dy (before) or dy * act(z) (after) and dn = dt * w:
//   dh = rstd * (dn - n * mean(dn * n) - mean(dn))   (no mean(dn) without centering)
//   before: dx = dh * act(z), dz = dh * x * act'(z)
//   after:  dx = dh,          dz = dy * (n * w + b) * act'(z)
//   dw[c] = sum over rows of dt * n,  db[c] = sum of dt
// A warp takes a group (its 32 lanes stride through the group's values, three
// reads forward, four backward, all but the first from cache), and the
// backward recomputes the statistics, as the CPU kernels do (the saved ones
// are the op's outputs, in the input's dtype). float16 and bfloat16 compute in
// float, float32 in float, float64 in double. dw/db: each block of rows sums
// its part of every feature into the workspace, then param_finish adds the
// parts in order (deterministic, no atomics).
//
// Compiled by nvcc into the library and, through HIP-CPU, into the CPU-run
// tests (tests/cuda/), as kernels.cu is.

#include "cpu/gated_kernels.h"
#include "cuda/kernels.h"

#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace gated {

using Shape = pln::cpu::gated::Shape;

/// y, and the per-group mean and rstd ([rows, groups], in T; both null when
/// no backward follows). weight and bias hold C values.
template <typename T>
void forward(const Shape& s, const T* x, const T* z, const T* weight, const T* bias, T* y, T* mean, T* rstd,
             void* stream);

/// dx and dz, and dweight and dbias ([C], in the accumulation type; both null
/// when not wanted). `workspace` holds workspace_elements(s) values of it.
template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const T* weight, const T* bias, T* dx, T* dz,
              typename Acc<T>::type* dweight, typename Acc<T>::type* dbias, typename Acc<T>::type* workspace,
              void* stream);

/// Accumulation values backward's workspace needs for this shape.
int64_t workspace_elements(const Shape& s);

}  // namespace gated
}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
