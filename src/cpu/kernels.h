#pragma once
// Fused CPU kernels of Parallel LN (p = 2). The input is viewed as a contiguous
// [outer, C, inner] array whose C axis is split into groups of `group`
// consecutive features; every (outer, group, inner) triple is normalised on
// its own. NCHW gives inner = H*W; every features-last layout gives inner = 1.
//
// The kernels are compiled once per CPU capability (see CMakeLists.txt) into
// namespaces pln::cpu::<capability>; src/ops/cpu.cpp picks one at run time.

#include <cstdint>

namespace pln::cpu {

struct Geometry {
  int64_t outer;
  int64_t channels;
  int64_t inner;
  int64_t group;
  int64_t num_groups() const { return channels / group; }
  /// Number of (mean, rstd) pairs: one per normalised group instance.
  int64_t num_stats() const { return outer * num_groups() * inner; }
  int64_t numel() const { return outer * channels * inner; }
};

// mean/rstd are indexed (o * num_groups + k) * inner + i; forward takes null
// for both when the statistics are not needed (no backward will follow). `weight` and
// `bias` always hold C values (callers pass ones/zeros when not affine).
// Statistics are kept in float for float data and double for double data.
//
// backward: any of dx, dweight, dbias may be null. dweight/dbias are [C]
// double buffers that the kernel overwrites.
#define PLN_DECLARE_KERNELS(NS)                                                            \
  namespace NS {                                                                           \
  void forward(const Geometry& g, const float* x, const float* weight, const float* bias,  \
               float* y, float* mean, float* rstd, double eps, bool centering);            \
  void forward(const Geometry& g, const double* x, const double* weight,                   \
               const double* bias, double* y, double* mean, double* rstd, double eps,      \
               bool centering);                                                            \
  void backward(const Geometry& g, const float* dy, const float* x, const float* mean,     \
                const float* rstd, const float* weight, bool centering, float* dx,         \
                double* dweight, double* dbias);                                           \
  void backward(const Geometry& g, const double* dy, const double* x, const double* mean,  \
                const double* rstd, const double* weight, bool centering, double* dx,      \
                double* dweight, double* dbias);                                           \
  }

PLN_DECLARE_KERNELS(base)
PLN_DECLARE_KERNELS(avx2)
PLN_DECLARE_KERNELS(avx512)
PLN_DECLARE_KERNELS(neon)
#undef PLN_DECLARE_KERNELS

/// The capability the kernels run with: "avx512", "avx2" or "base" on x86-64,
/// "neon" or "base" on aarch64, the best this CPU supports unless the
/// environment variable PLN_CPU_CAPABILITY names one.
const char* capability();

/// Whether the AVX-512 backward of float groups of 8 writes a dx of 8 MiB or
/// more around the cache (and prefetches x and dy): where that is faster,
/// AMD family 1Ah (Zen 5), unless PLN_CPU_STREAM_BACKWARD is 1 (always) or 0
/// (never). Any other value is an error on every backward call.
bool streams_octet_backward();

/// Dispatches to the best compiled capability.
template <typename T>
void forward(const Geometry& g, const T* x, const T* weight, const T* bias, T* y, T* mean,
             T* rstd, double eps, bool centering);
template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd,
              const T* weight, bool centering, T* dx, double* dweight, double* dbias);

}  // namespace pln::cpu
