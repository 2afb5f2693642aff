#pragma once
// Element types and accumulation: conversions, warp and block sums, vector
// loads, and the launch arithmetic the paths share.
// Part of the fused CUDA kernels of src/cuda/kernels.cu and src/cuda/gated.cu
// (once each, in the build's inline namespace).

#include "cuda/kernels.h"
#include "cuda/runtime.h"

#include <algorithm>
#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace {

__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename S>
__device__ __forceinline__ S from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }

template <typename S, typename A>
__device__ __forceinline__ S store_value(A v) {
  if constexpr (sizeof(A) == 8) {
    return static_cast<S>(v);
  } else {
    return from_float<S>(v);
  }
}

__device__ __forceinline__ float rsqrt_acc(float v) { return rsqrtf(v); }
__device__ __forceinline__ double rsqrt_acc(double v) { return rsqrt(v); }

// Sum over the `lanes` threads of a sub-warp (lanes: a power of two, <= 32).
template <typename A>
__device__ __forceinline__ A group_sum(A v, int lanes, unsigned mask) {
  for (int offset = lanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, lanes);
  return v;
}

// The mask of this thread's sub-warp of `lanes` threads.
__device__ __forceinline__ unsigned subwarp_mask(int lanes) {
  if (lanes >= 32) return 0xffffffffu;
  const unsigned first = (threadIdx.x % 32) / lanes * lanes;
  return ((1u << lanes) - 1u) << first;
}

// Sums of N values over the block (blockDim.x a multiple of 32), in a fixed
// order; `shared` holds N * 32 values.
template <typename A, int N>
__device__ void block_sums(A (&v)[N], A* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
  for (int n = 0; n < N; ++n) v[n] = group_sum(v[n], 32, 0xffffffffu);
  __syncthreads();  // `shared` may hold the previous call's sums
  if (lane == 0) {
#pragma unroll
    for (int n = 0; n < N; ++n) shared[n * 32 + warp] = v[n];
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < N; ++n) {
    A total = 0;
    for (int w = 0; w < warps; ++w) total += shared[n * 32 + w];
    v[n] = total;
  }
}

// VEC values of S that move as one load of up to 16 bytes.
template <typename S, int VEC>
struct alignas(sizeof(S) * VEC) Pack {
  S v[VEC];
};

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Blocks a launch aims at (enough to fill an H200's 132 SMs); also the most
// workspace rows of the features-last kernels.
constexpr int64_t kTargetBlocks = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

// ------------------------------------------------------- dweight, dbias ---

// dweight[c] and dbias[c]: the sums of `parts` workspace rows, in order.
template <typename A>
__global__ void param_finish(int64_t channels, int64_t parts, const A* __restrict__ dw_ws,
                             const A* __restrict__ db_ws, A* __restrict__ dweight, A* __restrict__ dbias) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  A dw = 0, db = 0;
  for (int64_t k = 0; k < parts; ++k) dw += dw_ws[k * channels + c], db += db_ws[k * channels + c];
  dweight[c] = dw;
  dbias[c] = db;
}

// The storage type kernels see for each element type of the header.
template <typename T>
struct Storage {
  using type = T;
};
template <>
struct Storage<half_t> {
  using type = __half;
};
template <>
struct Storage<bfloat16_t> {
  using type = __nv_bfloat16;
};

}  // namespace
}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
