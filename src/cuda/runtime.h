#pragma once
// What src/cuda/kernels.cu takes from a CUDA runtime, from one of two:
//
// - nvcc (the library's CUDA kernels): the CUDA runtime and its 16-bit types;
//   launch() is the triple-chevron launch.
// - GCC or Clang with PLN_CUDA_ON_HIP_CPU defined (the CPU-run CUDA tests,
//   tests/cuda/): HIP-CPU, the header-only HIP runtime for CPUs vendored
//   under third_party/hip-cpu, which runs each block's threads as fibers.
//   The few names the kernels use that HIP-CPU spells otherwise or lacks
//   (the _sync shuffle, bfloat16, rsqrt, the CUDA error and stream names)
//   are defined here; launch() is HIP-CPU's launch. The kernels' text is the
//   same in both.
//
// What HIP-CPU cannot show (docs/cuda.md): it ignores shuffle masks, runs a
// warp as 64 lanes, makes every shuffle a barrier of the whole block (so the
// kernels keep the count of shuffles and __syncthreads uniform across a
// block), and runs one thread at a time, so there are no races to find.

#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#elif defined(PLN_CUDA_ON_HIP_CPU)

#include <hip/hip_runtime.h>

#include <cmath>
#include <cstring>

// HIP-CPU marks kernels `simd` too, for which GCC warns on every kernel that
// takes a struct; the kernels run as plain (flattened) functions.
#undef __global__
#define __global__ __attribute__((flatten))

using cudaStream_t = hipStream_t;
using cudaError_t = hipError_t;
inline constexpr hipError_t cudaSuccess = hipSuccess;
inline cudaError_t cudaGetLastError() noexcept { return hipGetLastError(); }
inline const char* cudaGetErrorString(cudaError_t e) noexcept { return hipGetErrorString(e); }
// HIP-CPU drains its null stream from two threads at once (Runtime::
// wait_all_streams_ takes its queued kernels both in an std::async and in its
// loop over every stream, the null stream among them), so two kernels queued
// on it can run concurrently: param_finish then reads workspace rows the
// backward kernel has not yet written. A created stream is drained by one
// thread, in order, so the null stream stands for one created stream here.
inline hipStream_t in_order(hipStream_t s) {
  if (s != nullptr) return s;
  static const hipStream_t created = [] {
    hipStream_t t = nullptr;
    return hipStreamCreate(&t) == hipSuccess ? t : nullptr;
  }();
  return created;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { return hipStreamSynchronize(in_order(s)); }

// HIP-CPU's shuffles take no mask: every thread of the block takes part.
template <typename T>
inline T __shfl_xor_sync(unsigned /*mask*/, T v, int lane_mask, int width) noexcept {
  return __shfl_xor(v, lane_mask, width);
}

inline float rsqrtf(float v) noexcept { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) noexcept { return 1.0 / std::sqrt(v); }

// bfloat16 as CUDA's cuda_bf16.h has it, for the conversions the kernels use:
// the high half of a float, rounded to nearest even (NaN kept quiet).
struct alignas(2) __nv_bfloat16 {
  uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 v) noexcept {
  const uint32_t u = uint32_t(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (std::isnan(f)) return {static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>(u >> 16)};
}

#else
#error "src/cuda/runtime.h: compile with nvcc, or define PLN_CUDA_ON_HIP_CPU and put third_party/hip-cpu/include on the include path"
#endif

namespace pln::cuda {

/// Launches `kernel` on `blocks` blocks of `threads` threads on `stream`: the
/// triple-chevron launch under nvcc, HIP-CPU's launch otherwise. The arguments
/// are converted to the kernel's parameter types first.
template <typename... Params, typename... Args>
inline void launch(void (*kernel)(Params...), dim3 blocks, dim3 threads, std::size_t shared_bytes,
                   cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
#if defined(__CUDACC__)
  kernel<<<blocks, threads, shared_bytes, stream>>>(static_cast<Params>(std::forward<Args>(args))...);
#else
  hipLaunchKernelGGL(kernel, blocks, threads, static_cast<std::uint32_t>(shared_bytes), in_order(stream),
                     static_cast<Params>(std::forward<Args>(args))...);
#endif
}

}  // namespace pln::cuda
