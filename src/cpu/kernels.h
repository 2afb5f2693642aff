#pragma once
// Fused CPU kernels of Parallel LN (p = 2). The input is viewed as a contiguous
// [outer, C, inner] array whose C axis is split into groups of `group`
// consecutive features; every (outer, group, inner) triple is normalised on
// its own. NCHW gives inner = H*W; every features-last layout gives inner = 1.
//
// The kernels are compiled once per CPU capability (see CMakeLists.txt) into
// namespaces pln::cpu::<capability>; src/ops/cpu_capability.cpp picks one at run time.

#include <cstdint>

#include "cpu/storage.h"

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

// S, the stored type of x, y, dy and dx: float, double, bfloat16 or float16,
// computed in compute_t<S> (float for the 16-bit types, each result rounded
// once to S), the type of weight, bias, mean and rstd.
//
// mean/rstd are indexed (o * num_groups + k) * inner + i; forward takes null
// for both when the statistics are not needed (no backward will follow).
// `weight` and `bias` always hold C values (callers pass ones/zeros when not
// affine).
//
// backward: any of dx, dweight, dbias may be null. dweight/dbias are [C]
// double buffers that the kernel overwrites.
#define PLN_DECLARE_KERNELS(NS)                                                                            \
  namespace NS {                                                                                           \
  template <typename S>                                                                                    \
  void forward(const Geometry& g, const S* x, const compute_t<S>* weight, const compute_t<S>* bias, S* y, \
               compute_t<S>* mean, compute_t<S>* rstd, double eps, bool centering);                       \
  template <typename S>                                                                                    \
  void backward(const Geometry& g, const S* dy, const S* x, const compute_t<S>* mean,                     \
                const compute_t<S>* rstd, const compute_t<S>* weight, bool centering, S* dx,              \
                double* dweight, double* dbias);                                                           \
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
template <typename S>
void forward(const Geometry& g, const S* x, const compute_t<S>* weight, const compute_t<S>* bias, S* y,
             compute_t<S>* mean, compute_t<S>* rstd, double eps, bool centering);
template <typename S>
void backward(const Geometry& g, const S* dy, const S* x, const compute_t<S>* mean, const compute_t<S>* rstd,
              const compute_t<S>* weight, bool centering, S* dx, double* dweight, double* dbias);

}  // namespace pln::cpu
