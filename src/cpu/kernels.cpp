// Fused Parallel LN kernels: the drivers, which split the work into parallel
// tasks and pick each row's or chunk's kernel by layout, dtype, group size and
// capability (every #if on a capability is here), and the formulas. Compiled
// once per capability with PLN_CPU_NS set to its namespace (base: the
// compiler's default target; avx2: -mavx2 -mfma; avx512: avx2 plus AVX-512
// F/DQ/VL/BW, see CMakeLists.txt). Float arithmetic is never reassociated:
// the centring below depends on its order.
//
// The kernels, one header a path, each SIMD routine beside its scalar twin:
//   kernels/strided.h        the inner-strided layouts (NCHW, NCL)
//   kernels/features_last.h  groups of contiguous features (NC, NTC, NHWC)
//   kernels/octets_avx512.h  float groups of 8 with AVX-512
//   kernels/simd.h           the SIMD vocabulary they share
//   kernels/streaming.h      when outputs are written around the cache
// They are headers of this one translation unit rather than sources of their
// own: the drivers inline the per-block kernels, and GCC fuses a multiply and
// an add into one FMA across inlined code (-ffp-contract=fast, its default
// for C++), so the bits the kernels give depend on what is compiled together.
//
// Centring (PLN): every kernel subtracts one of the group's own values, its
// shift s, before anything else. x - s is exact when x and s are close (and
// well-conditioned otherwise), so the mean m of the shifted values and the
// centred values (x - s) - m keep float rounding of the centred values at any
// common offset, where x - mean(x) would round at the offset's magnitude. The
// forward saves mean = s + m (rounded); the backward re-centres x - mean on
// the mean of its own values in the same way (see backward_chunk).
//
// Groups are small (often 4-16 features), so nothing here vectorises within
// one group: the inner-strided kernels run along the contiguous position axis
// with all g rows of a group in step, and the features-last kernels take eight
// float (four double) groups at a time and reduce them together with one
// horizontal-add tree (sixteen float groups of 8 with AVX-512). Other group
// sizes take scalar loops.
//
// ---------------------------------------------------------------- forward ---
//
// Per group of g features x_0 .. x_{g-1} (one position), with the shift
// s = x_0, the group's first value (PLS, no centring: s = 0 and m = 0):
//   m     = mean_j(x_j - s)
//   xc_j  = (x_j - s) - m                        (x_j - mean(x), rounded at xc's magnitude)
//   rstd  = 1 / sqrt(mean_j(xc_j^2) + eps)
//   y_j   = xc_j * (rstd * weight_j) + bias_j
//   saved: mean = s + m, rstd                    (PLS: mean = 0)
// The scalar kernels take mean_j(xc_j^2) in a second pass over xc. The SIMD
// statistics (but stats_quads_avx2's, two passes as the scalar kernels) are one
// pass over d_j = x_j - s: mean_j(xc_j^2) = mean_j(d_j^2) - m^2 (clamped at 0),
// which the shift keeps free of cancellation; the SIMD output
// is fmadd(xc_j, rstd * weight_j, bias_j) (forward_chunk_avx2) or
// fmadd(xc_j * rstd, weight_j, bias_j) (the features-last kernels), one rounding
// fewer than the scalar kernels' multiply and add.
//
// --------------------------------------------------------------- backward ---
//
// With y = (x - mean) * rstd and gy = dy * weight, per group:
//   dx = rstd * (gy - mean_j(gy) - y * mean_j(gy * y))   (PLS drops mean_j(gy))
//   dweight[c] = sum dy * y,  dbias[c] = sum dy  over all positions.
//
// The saved mean m~ is rounded at the offset's magnitude, so y is taken from
// d = x - m~ re-centred on its own mean b = mean_j(d) (zero but for m~'s
// rounding; PLS: b = 0):
//   y = (d - b) * rstd,  mean_j(gy * y) = rstd * (mean_j(gy * d) - b * mean_j(gy))
//
// The scalar kernels are backward_chunk (inner-strided layouts) and
// backward_groups (features last); each SIMD routine names its scalar twin.

#include "cpu/kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/capability.h"
#include "cpu/kernels/features_last.h"
#include "cpu/kernels/octets_avx512.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/streaming.h"
#include "cpu/kernels/strided.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Work per parallel task, in elements.
constexpr int64_t kGrainElements = 1 << 15;


// One row of NG groups of G contiguous features. The AVX2 kernels take the
// statistics of every block first, then write the outputs: the blocks' long
// reduce-sqrt-divide chains are independent and overlap, where computing each
// block's output right after its statistics would wait on them. The AVX-512
// kernel's blocks are twice as large and keep their values in registers for
// the output, so it runs one block ahead instead (forward_octet_blocks; the
// statistics of the whole row first would lose to no overlap at all).
// save_stats: mean and rstd are wanted after the call (not a scratch).
// `shifted` is a scratch of NG values for the AVX2 kernels' shifted means.
// stream: the AVX2 kernels' output is written around the cache (y is 32-byte
// aligned, see kStreamBytes); the caller fences.
template <typename T, bool kCenter>
void forward_row(const T* x, T* y, int64_t NG, int64_t G, const T* w, const T* b, T* mean,
                 T* rstd, [[maybe_unused]] T* shifted, T eps, [[maybe_unused]] bool save_stats,
                 [[maybe_unused]] bool stream) {
  int64_t k = 0;
#if PLN_HAVE_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (G == 8) {
      k = NG / 16 * 16;
      (save_stats ? forward_octet_blocks_avx512<kCenter, true>
                  : forward_octet_blocks_avx512<kCenter, false>)(x, y, w, b, mean, rstd, k / 16,
                                                                 k / 16, eps);
    }
  }
#endif
#if PLN_HAVE_AVX2
  const int64_t k0 = k;  // the AVX2 kernels start here
  if constexpr (std::is_same_v<T, float>) {
    if (G == 4) {
      for (; k + 8 <= NG; k += 8) {
        stats_quads_avx2<kCenter>(x + 4 * k, mean + k, shifted + k, rstd + k, eps);
      }
      const auto apply = stream ? apply_quads_avx2<kCenter, true> : apply_quads_avx2<kCenter, false>;
      for (int64_t q = k0; q < k; q += 8) {
        apply(x + 4 * q, y + 4 * q, w + 4 * q, b + 4 * q, shifted + q, rstd + q);
      }
    }
  }
  constexpr int kL = Lanes<T>::kLanes;
  if (G % kL == 0) {
    const int64_t V = G / kL;
    const auto row = [&](auto v_const) {
      constexpr int kV = decltype(v_const)::value;
      for (; k + kL <= NG; k += kL) {
        stats_groups_avx2<T, kCenter, kV>(x + k * G, shifted + k, rstd + k, V, eps);
      }
      T* const mean_k0 = save_stats ? mean + k0 : nullptr;
      (stream ? apply_groups_avx2<T, kCenter, kV, true> : apply_groups_avx2<T, kCenter, kV, false>)(
          x + k0 * G, y + k0 * G, w + k0 * G, b + k0 * G, shifted + k0, rstd + k0, mean_k0, k - k0, V);
    };
    switch (V) {
      case 1: row(std::integral_constant<int, 1>()); break;
      case 2: row(std::integral_constant<int, 2>()); break;
      case 4: row(std::integral_constant<int, 4>()); break;
      default: row(std::integral_constant<int, 0>());
    }
  }
#endif
  x += k * G, y += k * G, w += k * G, b += k * G, mean += k, rstd += k;
  switch (G) {
    case 2: return forward_groups<T, kCenter, 2>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 4: return forward_groups<T, kCenter, 4>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 8: return forward_groups<T, kCenter, 8>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 16: return forward_groups<T, kCenter, 16>(x, y, NG - k, G, w, b, mean, rstd, eps);
    default: return forward_groups<T, kCenter>(x, y, NG - k, G, w, b, mean, rstd, eps);
  }
}

template <typename T, bool kCenter>
void forward_impl(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                  T eps) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  if (g.numel() == 0) return;
  if (I == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainElements / C);
    const bool stream = streams_output(y, C, g.numel());
    [[maybe_unused]] const bool stream_octets =
        streams_output(y, C, g.numel(), 64, kStreamOctetForwardBytes);
    at::parallel_for(0, g.outer, grain, [&](int64_t begin, int64_t end) {
#if PLN_HAVE_AVX512
      // Rows of whole blocks of sixteen groups of 8: one pipeline through them all.
      if constexpr (std::is_same_v<T, float>) {
        if (G == 8 && C % 128 == 0) {
          const int64_t n = (end - begin) * C / 128;
          const int64_t o = begin;
          float* const mean_o = mean ? mean + o * NG : nullptr;
          float* const rstd_o = mean ? rstd + o * NG : nullptr;
          const auto blocks =
              stream_octets ? (mean ? forward_octet_blocks_avx512<kCenter, true, true>
                                    : forward_octet_blocks_avx512<kCenter, false, true>)
                            : (mean ? forward_octet_blocks_avx512<kCenter, true, false>
                                    : forward_octet_blocks_avx512<kCenter, false, false>);
          blocks(x + o * C, y + o * C, w, b, mean_o, rstd_o, n, C / 128, eps);
          if (stream_octets) _mm_sfence();  // order the non-temporal stores before the join
          return;
        }
      }
#endif
      // Without saved statistics, each row's go to a scratch that stays in L1.
      std::vector<T> scratch(static_cast<size_t>(mean ? NG : 3 * NG));
      for (int64_t o = begin; o < end; ++o) {
        T* mean_o = mean ? mean + o * NG : scratch.data() + NG;
        T* rstd_o = rstd ? rstd + o * NG : scratch.data() + 2 * NG;
        forward_row<T, kCenter>(x + o * C, y + o * C, NG, G, w, b, mean_o, rstd_o, scratch.data(),
                                eps, mean != nullptr, stream);
      }
#if PLN_HAVE_AVX2
      if (stream) _mm_sfence();  // order the non-temporal stores before the join
#endif
    });
    return;
  }
  const int64_t slabs = g.outer * NG;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / (G * I));
  [[maybe_unused]] const bool stream = streams_output(y, I, g.numel());
  at::parallel_for(0, slabs, grain, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(mean ? 0 : static_cast<size_t>(2 * kChunk));
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / NG, k = s % NG;
      const int64_t off = (o * C + k * G) * I;
      for (int64_t i0 = 0; i0 < I; i0 += kChunk) {
        const int64_t n = std::min(kChunk, I - i0);
        T* mean_s = mean ? mean + s * I + i0 : scratch.data();
        T* rstd_s = rstd ? rstd + s * I + i0 : scratch.data() + kChunk;
#if PLN_HAVE_AVX2
        if constexpr (std::is_same_v<T, float>) {
          const NextChunk next = next_chunk(i0, I, G, s + 1 < end);
          if (stream) {
            forward_chunk_avx2<kCenter, true>(x + off + i0, y + off + i0, I, n, G, w + k * G,
                                              b + k * G, mean_s, rstd_s, eps, next);
          } else {
            forward_chunk_avx2<kCenter, false>(x + off + i0, y + off + i0, I, n, G, w + k * G,
                                               b + k * G, mean_s, rstd_s, eps, next);
          }
          continue;
        }
#endif
        forward_chunk<T, kCenter>(x + off + i0, y + off + i0, I, n, G, w + k * G, b + k * G,
                                  mean_s, rstd_s, eps);
      }
    }
#if PLN_HAVE_AVX2
    if (stream) _mm_sfence();  // order the non-temporal stores before the join
#endif
  });
}

// Per-thread [C] partial sums for dweight and dbias, added up at the end.
struct ParamGradPartials {
  ParamGradPartials(int64_t channels, bool wanted)
      : C(channels), wanted(wanted),
        sums(wanted ? static_cast<size_t>(2 * channels * at::get_num_threads()) : 0, 0.0) {}
  double* dweight() { return wanted ? sums.data() + 2 * C * at::get_thread_num() : nullptr; }
  double* dbias() { return wanted ? dweight() + C : nullptr; }
  void reduce_into(double* dw, double* db) const {
    if (dw) std::fill(dw, dw + C, 0.0);
    if (db) std::fill(db, db + C, 0.0);
    for (size_t t = 0; t < sums.size(); t += 2 * C) {
      for (int64_t c = 0; c < C; ++c) {
        if (dw) dw[c] += sums[t + c];
        if (db) db[c] += sums[t + C + c];
      }
    }
  }
  int64_t C;
  bool wanted;
  std::vector<double> sums;
};

// stream: the AVX-512 kernel's dx is written around the cache (see
// backward_octet_blocks_avx512); the caller fences.
template <typename T, bool kCenter>
void backward_row(const T* dy, const T* x, int64_t NG, int64_t G, const T* mean, const T* rstd,
                  const T* w, T* dx, T* dw, T* db, [[maybe_unused]] bool stream) {
  int64_t k = 0;
#if PLN_HAVE_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (G == 8) {
      k = NG / 16 * 16;
      (stream ? backward_octet_blocks_avx512<kCenter, true> : backward_octet_blocks_avx512<kCenter, false>)(
          dy, x, mean, rstd, w, dx, dw, db, k / 16);
    }
  }
#endif
#if PLN_HAVE_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (G == 4) {
      for (; k + 8 <= NG; k += 8) {
        backward_quads_avx2<kCenter>(dy + 4 * k, x + 4 * k, mean + k, rstd + k, w + 4 * k,
                                     dx ? dx + 4 * k : nullptr, dw ? dw + 4 * k : nullptr,
                                     db ? db + 4 * k : nullptr);
      }
    }
  }
  constexpr int kL = Lanes<T>::kLanes;
  if (G % kL == 0) {
    const int64_t V = G / kL;
    for (; k + kL <= NG; k += kL) {
      const int64_t o = k * G;
      T* dxo = dx ? dx + o : nullptr;
      T* dwo = dw ? dw + o : nullptr;
      T* dbo = db ? db + o : nullptr;
      switch (V) {
        case 1: backward_groups_avx2<T, kCenter, 1>(dy + o, x + o, mean + k, rstd + k, w + o, dxo, dwo, dbo, V); break;
        case 2: backward_groups_avx2<T, kCenter, 2>(dy + o, x + o, mean + k, rstd + k, w + o, dxo, dwo, dbo, V); break;
        default: backward_groups_avx2<T, kCenter, 0>(dy + o, x + o, mean + k, rstd + k, w + o, dxo, dwo, dbo, V);
      }
    }
  }
#endif
  dy += k * G, x += k * G, w += k * G, mean += k, rstd += k;
  if (dx) dx += k * G;
  if (dw) dw += k * G, db += k * G;
  switch (G) {
    case 2: return backward_groups<T, kCenter, 2>(dy, x, NG - k, G, mean, rstd, w, dx, dw, db);
    case 4: return backward_groups<T, kCenter, 4>(dy, x, NG - k, G, mean, rstd, w, dx, dw, db);
    case 8: return backward_groups<T, kCenter, 8>(dy, x, NG - k, G, mean, rstd, w, dx, dw, db);
    case 16: return backward_groups<T, kCenter, 16>(dy, x, NG - k, G, mean, rstd, w, dx, dw, db);
    default: return backward_groups<T, kCenter>(dy, x, NG - k, G, mean, rstd, w, dx, dw, db);
  }
}

template <typename T, bool kCenter>
void backward_impl(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd,
                   const T* w, T* dx, double* dweight, double* dbias) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  ParamGradPartials partials(C, dweight != nullptr || dbias != nullptr);
  if (g.numel() > 0) {
    if (I == 1) {
      const int64_t grain = std::max<int64_t>(1, kGrainElements / C);
      [[maybe_unused]] const bool stream = std::is_same_v<T, float> && G == 8 && streams_octet_backward() &&
                                           streams_output(dx, C, g.numel(), 64);
      at::parallel_for(0, g.outer, grain, [&](int64_t begin, int64_t end) {
        // Rows of one task are summed in T, then added to the double partials.
        std::vector<T> local(partials.wanted ? static_cast<size_t>(2 * C) : 0, T(0));
        T* dw = partials.wanted ? local.data() : nullptr;
        T* db = partials.wanted ? local.data() + C : nullptr;
        for (int64_t o = begin; o < end; ++o) {
          backward_row<T, kCenter>(dy + o * C, x + o * C, NG, G, mean + o * NG, rstd + o * NG, w,
                                   dx ? dx + o * C : nullptr, dw, db, stream);
        }
#if PLN_HAVE_AVX512
        if (stream) _mm_sfence();  // order the non-temporal stores before the join
#endif
        if (partials.wanted) {
          double* pw = partials.dweight();
          double* pb = partials.dbias();
          for (int64_t c = 0; c < C; ++c) pw[c] += dw[c], pb[c] += db[c];
        }
      });
    } else {
      const int64_t grain = std::max<int64_t>(1, kGrainElements / (G * I));
      [[maybe_unused]] const bool stream = streams_output(dx, I, g.numel());
      at::parallel_for(0, g.outer * NG, grain, [&](int64_t begin, int64_t end) {
        double* dw = partials.dweight();
        double* db = partials.dbias();
        for (int64_t s = begin; s < end; ++s) {
          const int64_t o = s / NG, k = s % NG;
          const int64_t off = (o * C + k * G) * I;
          for (int64_t i0 = 0; i0 < I; i0 += kChunk) {
            const int64_t n = std::min(kChunk, I - i0);
            double* dw_k = dw ? dw + k * G : nullptr;
            double* db_k = db ? db + k * G : nullptr;
            T* dx_s = dx ? dx + off + i0 : nullptr;
#if PLN_HAVE_AVX2
            if constexpr (std::is_same_v<T, float>) {
              const NextChunk next = next_chunk(i0, I, G, s + 1 < end);
              if (stream) {
                backward_chunk_avx2<kCenter, true>(dy + off + i0, x + off + i0, I, n, G, mean + s * I + i0,
                                                   rstd + s * I + i0, w + k * G, dx_s, dw_k, db_k, next);
              } else {
                backward_chunk_avx2<kCenter, false>(dy + off + i0, x + off + i0, I, n, G, mean + s * I + i0,
                                                    rstd + s * I + i0, w + k * G, dx_s, dw_k, db_k, next);
              }
              continue;
            }
#endif
            backward_chunk<T, kCenter>(dy + off + i0, x + off + i0, I, n, G, mean + s * I + i0,
                                       rstd + s * I + i0, w + k * G, dx_s, dw_k, db_k);
          }
        }
#if PLN_HAVE_AVX2
        if (stream) _mm_sfence();  // order the non-temporal stores before the join
#endif
      });
    }
  }
  partials.reduce_into(dweight, dbias);
}

template <typename T>
void forward_any(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                 double eps, bool centering) {
  if (centering) {
    forward_impl<T, true>(g, x, w, b, y, mean, rstd, static_cast<T>(eps));
  } else {
    forward_impl<T, false>(g, x, w, b, y, mean, rstd, static_cast<T>(eps));
  }
}

template <typename T>
void backward_any(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd,
                  const T* w, bool centering, T* dx, double* dw, double* db) {
  if (centering) {
    backward_impl<T, true>(g, dy, x, mean, rstd, w, dx, dw, db);
  } else {
    backward_impl<T, false>(g, dy, x, mean, rstd, w, dx, dw, db);
  }
}

}  // namespace

void forward(const Geometry& g, const float* x, const float* w, const float* b, float* y,
             float* mean, float* rstd, double eps, bool centering) {
  forward_any(g, x, w, b, y, mean, rstd, eps, centering);
}
void forward(const Geometry& g, const double* x, const double* w, const double* b, double* y,
             double* mean, double* rstd, double eps, bool centering) {
  forward_any(g, x, w, b, y, mean, rstd, eps, centering);
}
void backward(const Geometry& g, const float* dy, const float* x, const float* mean,
              const float* rstd, const float* w, bool centering, float* dx, double* dw,
              double* db) {
  backward_any(g, dy, x, mean, rstd, w, centering, dx, dw, db);
}
void backward(const Geometry& g, const double* dy, const double* x, const double* mean,
              const double* rstd, const double* w, bool centering, double* dx, double* dw,
              double* db) {
  backward_any(g, dy, x, mean, rstd, w, centering, dx, dw, db);
}

}  // namespace pln::cpu::PLN_CPU_NS
