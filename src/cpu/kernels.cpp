// Fused Parallel LN kernels: the drivers, which split the work into parallel
// tasks and pick each row's, group's or chunk's kernel by layout, dtype, group
// size and capability, and the formulas. Compiled once per capability with
// PLN_CPU_NS set to its namespace (base: the compiler's default target; avx2:
// -mavx2 -mfma; avx512: avx2 plus AVX-512 F/DQ/VL/BW; on aarch64, neon:
// Advanced SIMD, see CMakeLists.txt). NEON enters through the vector
// vocabulary alone (vec.h): the paths written over it (large groups, groups
// of one) take it; the small-group paths have AVX2 kernels only, and their
// scalar loops elsewhere.
// The capability enters in one block of this file ("the capability's paths"),
// as functions the drivers call whatever it is; no function body holds an #if.
// Float arithmetic is never reassociated: the centring below depends on its order.
//
// The kernels, one header a path, each SIMD routine beside its scalar twin:
//   kernels/large_groups.h   large groups, SIMD within a group, every layout,
//                            one template over the vector vocabulary (vec.h)
//   kernels/strided.h        small groups of the inner-strided layouts (NCHW, NCL)
//   kernels/features_last.h  small groups of contiguous features (NC, NTC, NHWC)
//   kernels/octets_avx512.h  float groups of 8 with AVX-512
//   kernels/simd.h           the AVX2 vocabulary of the small-group kernels
//   kernels/vec.h            the vector vocabulary: scalar, AVX2, AVX-512, NEON types
//   kernels/streaming.h      when outputs are written around the cache
// They are headers of this one translation unit rather than sources of their
// own: the drivers inline the per-block kernels, and GCC fuses a multiply and
// an add into one FMA across inlined code (-ffp-contract=fast, its default
// for C++), so the bits the kernels give depend on what is compiled together.
//
// Group sizes: small groups (below kLargeGroup) put
// several groups in one register: the inner-strided kernels run along the
// contiguous position axis with all g rows of a group in step, and the
// features-last kernels take eight float (four double) groups at a time and
// reduce them together with one horizontal-add tree (sixteen float groups of 8
// with AVX-512), as they do features-last float groups of 24 to 64 in rows of
// whole blocks of eight (register_groups); other small sizes take scalar
// loops. Large groups take SIMD
// within the group, blocked sums widened to double and two passes for the
// statistics (large_groups.h), so that their error does not grow with g; a
// task then holds whole groups, not whole rows, or, where a few groups of
// 32768 features and more leave threads idle, a run of one group's pieces
// ("split groups" below).
//
// Centring (PLN): every kernel subtracts one of the group's own values, its
// shift s, before anything else. x - s is exact when x and s are close (and
// well-conditioned otherwise), so the mean m of the shifted values and the
// centred values (x - s) - m keep float rounding of the centred values at any
// common offset, where x - mean(x) would round at the offset's magnitude. The
// forward saves mean = s + m (rounded); the backward re-centres x - mean on
// the mean of its own values in the same way (see backward_chunk).
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
// Every kernel takes mean_j(xc_j^2) in a second pass over xc: one pass,
// mean_j(d_j^2) - m^2 with d_j = x_j - s, is one sum fewer but loses bits as
// (m / std)^2 grows (the small-group kernels' statistics were one pass, at
// up to four times ATen's error features last and nine times NCHW, g = 16 on
// relu(randn): bench/results/2026-12-05-intel-xeon-groups.md). The SIMD output is
// fmadd(xc_j, rstd * weight_j, bias_j) (forward_chunk_avx2) or
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
#include "cpu/kernels/large_groups.h"
#include "cpu/kernels/octets_avx512.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/streaming.h"
#include "cpu/kernels/strided.h"
#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Work per parallel task, in elements: about 128 KiB of float input, so that a
// task's time dwarfs the thread pool's hand-over (a few microseconds).
constexpr int64_t kGrainElements = 1 << 15;
// The same for a fill, which takes far less time a value.
constexpr int64_t kFillGrain = 1 << 22;

// The group size from which a group is normalised with SIMD within the group
// (large_groups.h), in every layout, but for the register groups below.
// Smaller groups take the kernels that hold several groups in a register, and
// scalar loops for the sizes those do not cover; from 17 on a group spans two
// registers, and a size that is not a whole number of them would be left to
// the scalar loops.
constexpr int64_t kLargeGroup = 17;

bool large_group(int64_t G) { return G >= kLargeGroup; }

// The largest of the register groups (register_groups).
constexpr int64_t kMaxRegisterGroup = 64;

// Rows of dweight/dbias partial sums kept in T before they are added to the
// double sums: float sums of more rows would lose digits as the batch grows.
constexpr int64_t kParamGradRows = 16;

// ------------------------------------------------ the capability's paths ---
// What this compilation has beyond the portable kernels, as functions that the
// drivers below call whatever the capability: each takes the part of a row
// or chunk that its SIMD kernels cover and returns how much that was (or
// whether it took the chunk), and does nothing where the capability or the
// shape does not apply. The only #if on a capability in the drivers' file.

#if PLN_HAVE_AVX512
// Float groups of 8: the leading blocks of sixteen groups of one row.
template <typename T, bool kCenter>
int64_t forward_row_octets(const T* x, T* y, int64_t NG, int64_t G, const T* w, const T* b, T* mean,
                           T* rstd, T eps, bool save_stats) {
  if constexpr (std::is_same_v<T, float>) {
    if (G != 8) return 0;
    const int64_t k = NG / 16 * 16;
    (save_stats ? forward_octet_blocks_avx512<kCenter, true> : forward_octet_blocks_avx512<kCenter, false>)(
        x, y, w, b, mean, rstd, k / 16, k / 16, eps);
    return k;
  }
  return 0;
}

// Float groups of 8, rows of whole blocks: rows [begin, end) in one pipeline.
template <typename T, bool kCenter>
bool forward_rows_octets(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                         T eps, int64_t begin, int64_t end, bool stream) {
  if constexpr (std::is_same_v<T, float>) {
    const int64_t C = g.channels, NG = g.num_groups();
    if (g.group != 8 || C % 128 != 0) return false;
    const int64_t n = (end - begin) * C / 128;
    float* const mean_o = mean ? mean + begin * NG : nullptr;
    float* const rstd_o = mean ? rstd + begin * NG : nullptr;
    const auto blocks = stream ? (mean ? forward_octet_blocks_avx512<kCenter, true, true>
                                       : forward_octet_blocks_avx512<kCenter, false, true>)
                               : (mean ? forward_octet_blocks_avx512<kCenter, true, false>
                                       : forward_octet_blocks_avx512<kCenter, false, false>);
    blocks(x + begin * C, y + begin * C, w, b, mean_o, rstd_o, n, C / 128, eps);
    if (stream) _mm_sfence();  // order the non-temporal stores before the join
    return true;
  }
  return false;
}

template <typename T, bool kCenter>
int64_t backward_row_octets(const T* dy, const T* x, int64_t NG, int64_t G, const T* mean, const T* rstd,
                            const T* w, T* dx, T* dw, T* db, bool stream) {
  if constexpr (std::is_same_v<T, float>) {
    if (G != 8) return 0;
    const int64_t k = NG / 16 * 16;
    (stream ? backward_octet_blocks_avx512<kCenter, true> : backward_octet_blocks_avx512<kCenter, false>)(
        dy, x, mean, rstd, w, dx, dw, db, k / 16);
    return k;
  }
  return 0;
}
#else
template <typename T, bool kCenter>
int64_t forward_row_octets(const T*, T*, int64_t, int64_t, const T*, const T*, T*, T*, T, bool) {
  return 0;
}
template <typename T, bool kCenter>
bool forward_rows_octets(const Geometry&, const T*, const T*, const T*, T*, T*, T*, T, int64_t, int64_t,
                         bool) {
  return false;
}
template <typename T, bool kCenter>
int64_t backward_row_octets(const T*, const T*, int64_t, int64_t, const T*, const T*, const T*, T*, T*, T*,
                            bool) {
  return 0;
}
#endif  // PLN_HAVE_AVX512

#if PLN_HAVE_AVX2
// Features-last float groups of 3 to 8 whole registers (24 to 64 features) in
// rows of whole blocks of eight groups: the kernels that hold several groups
// in a register take them, which time below the kernels within a group (one
// thread, model widths, AVX2 and AVX-512: g = 32 forward 0.49-0.96 of their
// time, g = 64 0.72-0.92; g = 128 no faster;
// bench/results/2026-12-05-intel-xeon-groups.md).
// A row with a part block would leave that part to the scalar loops.
template <typename T>
bool register_groups(int64_t G, int64_t NG) {
  return std::is_same_v<T, float> && G >= kLargeGroup && G <= kMaxRegisterGroup && G % 8 == 0 && NG % 8 == 0;
}

// Groups [k, ...) of one row through the AVX2 kernels: float groups of 4 (eight
// at a time), and groups of a whole number of registers (one register's worth
// of groups at a time). Returns the first group they leave to the scalar loops.
template <typename T, bool kCenter>
int64_t forward_row_simd(int64_t k, const T* x, T* y, int64_t NG, int64_t G, const T* w, const T* b, T* mean,
                         T* rstd, T* shifted, T eps, bool save_stats, bool stream) {
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
        if constexpr (std::is_same_v<T, float> && kV == 1) {
          stats_octets_avx2<kCenter>(x + k * G, shifted + k, rstd + k, eps);
        } else {
          stats_groups_avx2<T, kCenter, kV>(x + k * G, shifted + k, rstd + k, V, eps);
        }
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
  return k;
}

template <typename T, bool kCenter>
int64_t backward_row_simd(int64_t k, const T* dy, const T* x, int64_t NG, int64_t G, const T* mean,
                          const T* rstd, const T* w, T* dx, T* dw, T* db) {
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
  return k;
}

// One chunk of an inner-strided group through the AVX2 kernels (float only):
// whether they took it.
template <typename T, bool kCenter>
bool forward_chunk_simd(const T* x, T* y, int64_t stride, int64_t n, int64_t G, const T* w, const T* b,
                        T* mean, T* rstd, T eps, NextChunk next, bool stream) {
  if constexpr (std::is_same_v<T, float>) {
    (stream ? forward_chunk_avx2<kCenter, true> : forward_chunk_avx2<kCenter, false>)(
        x, y, stride, n, G, w, b, mean, rstd, eps, next);
    return true;
  }
  return false;
}

template <typename T, bool kCenter>
bool backward_chunk_simd(const T* dy, const T* x, int64_t stride, int64_t n, int64_t G, const T* mean,
                         const T* rstd, const T* w, T* dx, double* dw, double* db, NextChunk next, bool stream) {
  if constexpr (std::is_same_v<T, float>) {
    (stream ? backward_chunk_avx2<kCenter, true> : backward_chunk_avx2<kCenter, false>)(
        dy, x, stride, n, G, mean, rstd, w, dx, dw, db, next);
    return true;
  }
  return false;
}

// Orders a task's non-temporal stores before the join.
inline void store_fence() { _mm_sfence(); }
#else
template <typename T>
bool register_groups(int64_t, int64_t) {
  return false;
}
template <typename T, bool kCenter>
int64_t forward_row_simd(int64_t k, const T*, T*, int64_t, int64_t, const T*, const T*, T*, T*, T*, T, bool,
                         bool) {
  return k;
}
template <typename T, bool kCenter>
int64_t backward_row_simd(int64_t k, const T*, const T*, int64_t, int64_t, const T*, const T*, const T*, T*,
                          T*, T*) {
  return k;
}
struct NextChunk {};
inline NextChunk next_chunk(int64_t, int64_t, int64_t, bool) { return {}; }
template <typename T, bool kCenter>
bool forward_chunk_simd(const T*, T*, int64_t, int64_t, int64_t, const T*, const T*, T*, T*, T, NextChunk,
                        bool) {
  return false;
}
template <typename T, bool kCenter>
bool backward_chunk_simd(const T*, const T*, int64_t, int64_t, int64_t, const T*, const T*, const T*, T*,
                         double*, double*, NextChunk, bool) {
  return false;
}
inline void store_fence() {}
#endif  // PLN_HAVE_AVX2

// Whether the AVX2 and AVX-512 kernels stream (write around the cache) at
// all: the portable kernels never do.
constexpr bool kStreams = PLN_HAVE_AVX2;

// ---------------------------------------------------------------- drivers ---

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
void forward_row(const T* x, T* y, int64_t NG, int64_t G, const T* w, const T* b, T* mean, T* rstd,
                 T* shifted, T eps, bool save_stats, bool stream) {
  int64_t k = forward_row_octets<T, kCenter>(x, y, NG, G, w, b, mean, rstd, eps, save_stats);
  k = forward_row_simd<T, kCenter>(k, x, y, NG, G, w, b, mean, rstd, shifted, eps, save_stats, stream);
  x += k * G, y += k * G, w += k * G, b += k * G, mean += k, rstd += k;
  switch (G) {
    case 2: return forward_groups<T, kCenter, 2>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 4: return forward_groups<T, kCenter, 4>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 8: return forward_groups<T, kCenter, 8>(x, y, NG - k, G, w, b, mean, rstd, eps);
    case 16: return forward_groups<T, kCenter, 16>(x, y, NG - k, G, w, b, mean, rstd, eps);
    default: return forward_groups<T, kCenter>(x, y, NG - k, G, w, b, mean, rstd, eps);
  }
}

// Features last, small groups: each task takes whole rows.
template <typename T, bool kCenter>
void forward_small_rows(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, T eps) {
  const int64_t NG = g.num_groups(), C = g.channels, G = g.group;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / C);
  const bool stream = kStreams && streams_output(y, C, g.numel());
  const bool stream_octets = kStreams && streams_output(y, C, g.numel(), 64, kStreamOctetForwardBytes);
  at::parallel_for(0, g.outer, grain, [&](int64_t begin, int64_t end) {
    // Rows of whole blocks of sixteen groups of 8: one pipeline through them all.
    if (forward_rows_octets<T, kCenter>(g, x, w, b, y, mean, rstd, eps, begin, end, stream_octets)) return;
    // Without saved statistics, each row's go to a scratch that stays in L1.
    std::vector<T> scratch(static_cast<size_t>(mean ? NG : 3 * NG));
    for (int64_t o = begin; o < end; ++o) {
      T* mean_o = mean ? mean + o * NG : scratch.data() + NG;
      T* rstd_o = rstd ? rstd + o * NG : scratch.data() + 2 * NG;
      forward_row<T, kCenter>(x + o * C, y + o * C, NG, G, w, b, mean_o, rstd_o, scratch.data(), eps,
                              mean != nullptr, stream);
    }
    if (stream) store_fence();
  });
}

// Features last, large groups: each task takes whole groups, so that a batch of
// a few rows still splits across the threads.
template <typename T, bool kCenter>
void forward_large_groups(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                          T eps) {
  const int64_t NG = g.num_groups(), G = g.group;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / G);
  using V = NativeVec<T>;
  const bool mid = mid_size_group<V>(G);
  const bool stream = kStreams && streams_output(y, G, g.numel(), int64_t(sizeof(T)) * V::kLanes);
  at::parallel_for(0, g.outer * NG, grain, [&](int64_t begin, int64_t end) {
    // Instance s (row s / NG, group k = s % NG) starts at x + s * G.
    for (int64_t s = begin; s < end;) {
      const int64_t k = s % NG;
      if (mid && s + kMidBatch <= end && k + kMidBatch <= NG) {
        T scratch[2 * kMidBatch];
        forward_mid_groups<V, kCenter, kMidBatch>(x + s * G, y + s * G, G, w + k * G, b + k * G,
                                                  mean ? mean + s : scratch, mean ? rstd + s : scratch + kMidBatch,
                                                  eps, s + 2 * kMidBatch <= end ? x + (s + kMidBatch) * G : nullptr,
                                                  stream);
        s += kMidBatch;
        continue;
      }
      T m, r;
      const T* next = s + 1 < end ? x + (s + 1) * G : nullptr;
      forward_large_group<V, kCenter>(x + s * G, y + s * G, G, w + k * G, b + k * G, m, r, eps, next, stream);
      if (mean) mean[s] = m, rstd[s] = r;
      ++s;
    }
    if (stream) store_fence();
  });
}

// ------------------------------------------------------- split groups ---
// Features last, a few large groups (one row of 65536 features, two of
// 262144, ...): each group is cut into runs of whole pieces (large_groups.h's
// kPiece features), and each pass over the groups becomes one parallel loop
// over (group, run) tasks, so that every thread takes part when the groups are
// fewer than the threads. The pieces' sums are added in the order the
// whole-group kernels add them, so the results are the same, bit for bit,
// however many threads take a group.
struct SplitPlan {
  int64_t groups;      // tasks' groups: instances (outer * num_groups), or features' groups
  int64_t pieces;      // pieces a group
  int64_t run_pieces;  // pieces a task
  int64_t runs;        // tasks a group

  // Runs enough that `groups` groups of G features give every thread a task.
  static SplitPlan over(int64_t groups, int64_t G) {
    const int64_t threads = at::get_num_threads(), pieces = pieces_of(G);
    const int64_t wanted_runs = std::min(pieces, (threads + groups - 1) / groups);
    const int64_t run_pieces = (pieces + wanted_runs - 1) / wanted_runs;
    return {groups, pieces, run_pieces, (pieces + run_pieces - 1) / run_pieces};
  }
  // f(u, p) for the pieces p of task t, run t % runs of group u = t / runs.
  template <typename F>
  void for_pieces(int64_t t, F f) const {
    const int64_t u = t / runs, first = (t % runs) * run_pieces;
    for (int64_t p = first; p < std::min(pieces, first + run_pieces); ++p) f(u, p);
  }
  // The pieces' sums of group u, added in the whole-group kernels' order.
  template <int K>
  void add_pieces(const std::vector<double>& parts, int64_t u, double (&out)[K]) const {
    for (int k = 0; k < K; ++k) out[k] = 0.0;
    for (int64_t p = 0; p < pieces; ++p)
      for (int k = 0; k < K; ++k) out[k] += parts[static_cast<size_t>((u * pieces + p) * K + k)];
  }
};

// The group size from which groups are split: below it, a group's passes take
// less time than handing a task to a thread (bench/bench_groups.cpp, --only
// few: on Zen 3, one row of 16384 took as long on two threads as on one).
constexpr int64_t kSplitGroup = 8 * kPiece;

// Rows up to which the backward takes the split groups' path at any thread
// count: it writes each feature's dweight/dbias from one task, where the
// whole-group path adds a [C] sum per thread and per task, which at a few
// rows of wide groups costs more than the rows themselves.
constexpr int64_t kFewRows = 16;

// Whether a features-last tensor's groups are split: large ones, fewer than
// the threads (the backward: or a few rows of them), outside a parallel
// region (where at::parallel_for runs inline).
bool splits_groups(const Geometry& g, bool backward) {
  if (g.inner != 1 || g.group < kSplitGroup || at::in_parallel_region()) return false;
  const int64_t threads = at::get_num_threads(), groups = g.outer * g.num_groups();
  return groups < threads || (backward && g.outer <= kFewRows);
}

// One parallel loop over a plan's tasks: body(u, p) for every piece of each.
template <typename Body>
void for_each_piece(const SplitPlan& plan, Body body) {
  at::parallel_for(0, plan.groups * plan.runs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) plan.for_pieces(t, body);
  });
}

template <typename T, bool kCenter>
void forward_split_groups(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, T eps) {
  using V = NativeVec<T>;
  const int64_t G = g.group, NG = g.num_groups();
  const SplitPlan plan = SplitPlan::over(g.outer * NG, G);
  std::vector<T> shift(static_cast<size_t>(plan.groups)), m(shift.size(), T(0)), r(shift.size());
  for (int64_t u = 0; u < plan.groups; ++u) shift[u] = kCenter ? x[u * G] : T(0);
  if (kCenter) {
    // Each piece's moments, then each group's merged in the whole-group kernel's order.
    std::vector<PieceMoments> pieces(static_cast<size_t>(plan.groups * plan.pieces));
    for_each_piece(plan, [&](int64_t u, int64_t p) {
      pieces[u * plan.pieces + p] = piece_moments<V>(x + u * G, shift[u], piece_begin(p), piece_end(p, G));
    });
    for (int64_t u = 0; u < plan.groups; ++u) {
      GroupMoments group;
      for (int64_t p = 0; p < plan.pieces; ++p) group.add(pieces[u * plan.pieces + p]);
      m[u] = mean_of<T>(group.sum, G);
      r[u] = rstd_of<T>(group.squares, G, eps);
    }
  } else {
    std::vector<double> parts(static_cast<size_t>(plan.groups * plan.pieces));
    for_each_piece(plan, [&](int64_t u, int64_t p) {
      double out[1];
      centred_squares<V, false>(x + u * G, shift[u], m[u], piece_begin(p), piece_end(p, G), out);
      parts[u * plan.pieces + p] = out[0];
    });
    for (int64_t u = 0; u < plan.groups; ++u) {
      double sum[1];
      plan.add_pieces<1>(parts, u, sum);
      r[u] = rstd_of<T>(sum[0], G, eps);
    }
  }
  for_each_piece(plan, [&](int64_t u, int64_t p) {
    const int64_t k = u % NG;
    write_normalised<V, kCenter>(x + u * G, y + u * G, piece_begin(p), piece_end(p, G), shift[u], m[u], r[u],
                                 w + k * G, b + k * G, nullptr, false);
  });
  if (!mean) return;
  for (int64_t u = 0; u < plan.groups; ++u) mean[u] = kCenter ? shift[u] + m[u] : T(0), rstd[u] = r[u];
}

// Features last: whether groups of G, NG a row, take the kernels within a
// group (large_groups.h) rather than those of several groups a register.
template <typename T>
bool within_group_kernels(int64_t G, int64_t NG) {
  return large_group(G) && !register_groups<T>(G, NG);
}

// How the inner-strided drivers split their work: tasks of whole (outer,
// group) slabs, kernel calls on chunks of positions.
struct StridedPlan {
  int64_t grain;  // slabs a task at least
  int64_t chunk;  // positions a kernel call at most
  bool large;     // the large-group kernels
  bool stream;    // `out` written around the cache
};

// Elements from a task's slab (positions i0.. of one group) to the slab it
// takes next: the group's next positions, or the next group's first; 0: none.
inline int64_t next_slab(int64_t i0, int64_t chunk, int64_t I, int64_t G, bool more_groups) {
  if (i0 + chunk < I) return chunk;
  return more_groups ? G * I - i0 : 0;
}

template <typename T>
StridedPlan strided_plan(const Geometry& g, const T* out) {
  const bool large = large_group(g.group);
  return {std::max<int64_t>(1, kGrainElements / (g.group * g.inner)), large ? slab_positions<T>(g.group) : kChunk,
          large, kStreams && streams_output(out, g.inner, g.numel())};
}

template <typename T, bool kCenter>
void forward_strided(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, T eps) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  const StridedPlan plan = strided_plan(g, y);
  const int64_t chunk = plan.chunk;
  const bool large = plan.large, stream = plan.stream;
  at::parallel_for(0, g.outer * NG, plan.grain, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(mean ? 0 : static_cast<size_t>(2 * chunk));
    std::vector<double> sums(large ? static_cast<size_t>(2 * chunk) : 0);
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / NG, k = s % NG;
      const int64_t off = (o * C + k * G) * I;
      for (int64_t i0 = 0; i0 < I; i0 += chunk) {
        const int64_t n = std::min(chunk, I - i0);
        T* mean_s = mean ? mean + s * I + i0 : scratch.data();
        T* rstd_s = rstd ? rstd + s * I + i0 : scratch.data() + chunk;
        const T* xs = x + off + i0;
        T* ys = y + off + i0;
        if (large) {
          const int64_t ahead = next_slab(i0, chunk, I, G, s + 1 < end);
          forward_large_slab<NativeVec<T>, kCenter>(xs, ys, I, n, G, w + k * G, b + k * G, mean_s, rstd_s, eps,
                                                     sums.data(), ahead ? xs + ahead : nullptr);
        } else if (!forward_chunk_simd<T, kCenter>(xs, ys, I, n, G, w + k * G, b + k * G, mean_s, rstd_s, eps,
                                                   next_chunk(i0, I, G, s + 1 < end), stream)) {
          forward_chunk<T, kCenter>(xs, ys, I, n, G, w + k * G, b + k * G, mean_s, rstd_s, eps);
        }
      }
    }
    if (stream) store_fence();
  });
}

// Groups of one value: elementwise (forward_ones), in tasks of whole rows.
template <typename T, bool kCenter>
void forward_groups_of_one(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, T eps) {
  const int64_t C = g.channels, I = g.inner;
  at::parallel_for(0, g.outer, std::max<int64_t>(1, kGrainElements / (C * I)), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const int64_t off = o * C * I;
      if (I == 1) {
        forward_ones<NativeVec<T>, kCenter>(x + off, y + off, C, w, b, true, mean ? mean + off : nullptr,
                                            mean ? rstd + off : nullptr, eps);
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t at = off + c * I;
        forward_ones<NativeVec<T>, kCenter>(x + at, y + at, I, w + c, b + c, false, mean ? mean + at : nullptr,
                                            mean ? rstd + at : nullptr, eps);
      }
    }
  });
}

template <typename T, bool kCenter>
void forward_impl(const Geometry& g, const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, T eps) {
  if (g.numel() == 0) return;
  if (g.group == 1) return forward_groups_of_one<T, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (g.inner > 1) return forward_strided<T, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (splits_groups(g, false)) return forward_split_groups<T, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (within_group_kernels<T>(g.group, g.num_groups())) {
    return forward_large_groups<T, kCenter>(g, x, w, b, y, mean, rstd, eps);
  }
  forward_small_rows<T, kCenter>(g, x, w, b, y, mean, rstd, eps);
}

// Per-thread [C] partial sums for dweight and dbias, added up at the end.
struct ParamGradPartials {
  ParamGradPartials(int64_t channels, bool wanted)
      : C(channels), wanted(wanted),
        sums(wanted ? static_cast<size_t>(2 * channels * at::get_num_threads()) : 0, 0.0) {}
  double* dweight() { return wanted ? sums.data() + 2 * C * at::get_thread_num() : nullptr; }
  double* dbias() { return wanted ? dweight() + C : nullptr; }
  // Adds a task's sums in T (the first `2 * C` values of local: dweight, then
  // dbias) to this thread's, and clears them.
  template <typename T>
  void flush(std::vector<T>& local) {
    if (!wanted) return;
    double* p = dweight();
    for (int64_t c = 0; c < 2 * C; ++c) p[c] += static_cast<double>(local[static_cast<size_t>(c)]);
    std::fill(local.begin(), local.end(), T(0));
  }
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
void backward_row(const T* dy, const T* x, int64_t NG, int64_t G, const T* mean, const T* rstd, const T* w,
                  T* dx, T* dw, T* db, bool stream) {
  int64_t k = backward_row_octets<T, kCenter>(dy, x, NG, G, mean, rstd, w, dx, dw, db, stream);
  k = backward_row_simd<T, kCenter>(k, dy, x, NG, G, mean, rstd, w, dx, dw, db);
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

// Features last: tasks of whole rows (small groups) or whole groups (large
// ones); dweight/dbias summed in T over at most kParamGradRows rows, then in
// double.
template <typename T, bool kCenter>
void backward_features_last(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd, const T* w,
                            T* dx, ParamGradPartials& partials) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels;
  using V = NativeVec<T>;
  const bool large = within_group_kernels<T>(G, NG), mid = mid_size_group<V>(G);
  // Tasks take rows (small groups) or groups (large ones): `units` of `per_unit` values.
  const int64_t units = large ? g.outer * NG : g.outer, per_unit = large ? G : C;
  const int64_t flush_every = kParamGradRows * (large ? NG : 1);
  const bool stream = kStreams && std::is_same_v<T, float> && G == 8 && streams_octet_backward() &&
                      streams_output(dx, C, g.numel(), 64);
  at::parallel_for(0, units, std::max<int64_t>(1, kGrainElements / per_unit), [&](int64_t begin, int64_t end) {
    std::vector<T> local(partials.wanted ? static_cast<size_t>(2 * C) : 0, T(0));
    T* dw = partials.wanted ? local.data() : nullptr;
    T* db = partials.wanted ? local.data() + C : nullptr;
    int64_t since_flush = 0;
    for (int64_t u = begin; u < end;) {
      int64_t done = 1;
      if (large) {
        // Instance u (row u / NG, group k = u % NG) starts at u * G.
        const int64_t k = u % NG, off = u * G;
        T* const dx_u = dx ? dx + off : nullptr;
        T* const dw_k = dw ? dw + k * G : nullptr;
        T* const db_k = db ? db + k * G : nullptr;
        if (mid && u + kMidBatch <= end && k + kMidBatch <= NG) {
          const bool more = u + 2 * kMidBatch <= end;  // the next batch is prefetched whole
          backward_mid_groups<V, kCenter, kMidBatch>(dy + off, x + off, G, mean + u, rstd + u, w + k * G, dx_u, dw_k,
                                                     db_k, more ? x + off + kMidBatch * G : nullptr,
                                                     more ? dy + off + kMidBatch * G : nullptr);
          done = kMidBatch;
        } else {
          const bool more = u + 1 < end;
          backward_large_group<V, kCenter>(dy + off, x + off, G, mean[u], rstd[u], w + k * G, dx_u, dw_k, db_k,
                                           more ? x + off + G : nullptr, more ? dy + off + G : nullptr);
        }
      } else {
        backward_row<T, kCenter>(dy + u * C, x + u * C, NG, G, mean + u * NG, rstd + u * NG, w,
                                 dx ? dx + u * C : nullptr, dw, db, stream);
      }
      u += done;
      since_flush += done;
      if (since_flush >= flush_every) partials.flush(local), since_flush = 0;
    }
    if (stream) store_fence();
    partials.flush(local);
  });
}

// The backward of split groups (see forward_split_groups). The last pass
// runs over (features' group k, run) tasks, each taking its pieces in every row,
// so that each feature's dweight/dbias is summed by one task: in T over at
// most kParamGradRows rows, then in double (as backward_features_last does),
// and written to dweight/dbias directly (no per-thread sums of C values,
// which would outweigh a few rows of wide groups).
template <typename T, bool kCenter>
void backward_split_groups(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd, const T* w,
                           T* dx, double* dweight, double* dbias) {
  using V = NativeVec<T>;
  const int64_t G = g.group, NG = g.num_groups();
  const SplitPlan plan = SplitPlan::over(g.outer * NG, G);
  // The last pass: runs of the features' groups, each in every row.
  const SplitPlan by_feature = SplitPlan::over(NG, G);
  std::vector<double> parts(static_cast<size_t>(plan.groups * plan.pieces * 3));
  for_each_piece(plan, [&](int64_t u, int64_t p) {
    double out[3];
    backward_sums<V, kCenter>(dy + u * G, x + u * G, mean[u], w + (u % NG) * G, piece_begin(p), piece_end(p, G),
                              out);
    for (int i = 0; i < 3; ++i) parts[(u * plan.pieces + p) * 3 + i] = out[i];
  });
  std::vector<BackwardCoefficients<T>> coefficients;
  for (int64_t u = 0; u < plan.groups; ++u) {
    double sums[3];
    plan.add_pieces<3>(parts, u, sums);
    coefficients.push_back(backward_coefficients<T, kCenter>(sums, G, rstd[u]));
  }
  const bool param_grads = dweight != nullptr || dbias != nullptr;
  at::parallel_for(0, NG * by_feature.runs, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> rows(param_grads ? static_cast<size_t>(2 * kPiece) : 0);  // dweight, dbias in T
    std::vector<double> sums(param_grads ? static_cast<size_t>(2 * kPiece) : 0);
    for (int64_t t = begin; t < end; ++t) {
      by_feature.for_pieces(t, [&](int64_t k, int64_t p) {
        const int64_t first = piece_begin(p), n = piece_end(p, G) - first;
        std::fill(rows.begin(), rows.end(), T(0));
        std::fill(sums.begin(), sums.end(), 0.0);
        const auto flush = [&] {
          for (int64_t j = 0; j < 2 * n; ++j) sums[j] += static_cast<double>(rows[j]), rows[j] = T(0);
        };
        for (int64_t o = 0; o < g.outer; ++o) {
          const int64_t u = o * NG + k, at = u * G + first;
          write_backward<V, kCenter>(dy + at, x + at, 0, n, mean[u], rstd[u], w + k * G + first, coefficients[u],
                                     dx ? dx + at : nullptr, param_grads ? rows.data() : nullptr,
                                     param_grads ? rows.data() + n : nullptr, nullptr, nullptr);
          if (param_grads && (o + 1) % kParamGradRows == 0) flush();
        }
        if (!param_grads) return;
        flush();
        if (dweight) std::copy(sums.begin(), sums.begin() + n, dweight + k * G + first);
        if (dbias) std::copy(sums.begin() + n, sums.begin() + 2 * n, dbias + k * G + first);
      });
    }
  });
}

template <typename T, bool kCenter>
void backward_strided(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx,
                      ParamGradPartials& partials) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  const StridedPlan plan = strided_plan(g, dx);
  const int64_t chunk = plan.chunk;
  const bool large = plan.large, stream = plan.stream;
  at::parallel_for(0, g.outer * NG, plan.grain, [&](int64_t begin, int64_t end) {
    double* dw = partials.dweight();
    double* db = partials.dbias();
    std::vector<double> sums(large ? static_cast<size_t>(3 * chunk) : 0);
    std::vector<T> coef(large ? static_cast<size_t>(3 * chunk) : 0);
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / NG, k = s % NG;
      const int64_t off = (o * C + k * G) * I;
      for (int64_t i0 = 0; i0 < I; i0 += chunk) {
        const int64_t n = std::min(chunk, I - i0);
        double* dw_k = dw ? dw + k * G : nullptr;
        double* db_k = db ? db + k * G : nullptr;
        T* dx_s = dx ? dx + off + i0 : nullptr;
        const T* dys = dy + off + i0;
        const T* xs = x + off + i0;
        const T* mean_s = mean + s * I + i0;
        const T* rstd_s = rstd + s * I + i0;
        if (large) {
          const int64_t ahead = next_slab(i0, chunk, I, G, s + 1 < end);
          backward_large_slab<NativeVec<T>, kCenter>(dys, xs, I, n, G, mean_s, rstd_s, w + k * G, dx_s, dw_k, db_k,
                                                      sums.data(), coef.data(), ahead ? xs + ahead : nullptr,
                                                      ahead ? dys + ahead : nullptr);
        } else if (!backward_chunk_simd<T, kCenter>(dys, xs, I, n, G, mean_s, rstd_s, w + k * G, dx_s, dw_k, db_k,
                                                    next_chunk(i0, I, G, s + 1 < end), stream)) {
          backward_chunk<T, kCenter>(dys, xs, I, n, G, mean_s, rstd_s, w + k * G, dx_s, dw_k, db_k);
        }
      }
    }
    if (stream) store_fence();
  });
}

// A centred group of one value normalises to 0 whatever the value (y = bias),
// so dx and dweight are 0 and dbias sums dy: written out rather than left to
// the formula, whose gy - mean(gy) a fused multiply-add leaves at a rounding
// error of gy, which rstd = 1/sqrt(eps) then multiplies.
template <typename T>
void backward_groups_of_one(const Geometry& g, const T* dy, T* dx, ParamGradPartials& partials) {
  const int64_t C = g.channels, I = g.inner;
  // dx in a few large pieces, whose fills the C library writes around the cache.
  if (dx) {
    at::parallel_for(0, g.numel(), kFillGrain, [&](int64_t begin, int64_t end) {
      std::fill(dx + begin, dx + end, T(0));
    });
  }
  if (!partials.wanted) return;
  at::parallel_for(0, g.outer, std::max<int64_t>(1, kGrainElements / (C * I)), [&](int64_t begin, int64_t end) {
    double* db = partials.dbias();
    for (int64_t o = begin; o < end; ++o) {
      const T* dy_o = dy + o * C * I;
      if (I == 1) {
        for (int64_t c = 0; c < C; ++c) db[c] += static_cast<double>(dy_o[c]);
        continue;
      }
      // A plane in blocked sums: a sequential double sum waits an add's latency a value.
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = dy_o + c * I;
        double sum[1];
        blocked_sums<NativeVec<T>, 1>(0, I, [&](auto w_, int64_t i, auto* acc) {
          using W = decltype(w_);
          acc[0] = W::add(acc[0], W::load(plane + i));
        }, sum);
        db[c] += sum[0];
      }
    }
  });
}

template <typename T, bool kCenter>
void backward_impl(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx,
                   double* dweight, double* dbias) {
  if (g.numel() == 0) {
    if (dweight) std::fill(dweight, dweight + g.channels, 0.0);
    if (dbias) std::fill(dbias, dbias + g.channels, 0.0);
    return;
  }
  if (splits_groups(g, true)) return backward_split_groups<T, kCenter>(g, dy, x, mean, rstd, w, dx, dweight, dbias);
  ParamGradPartials partials(g.channels, dweight != nullptr || dbias != nullptr);
  if (kCenter && g.group == 1) {
    backward_groups_of_one(g, dy, dx, partials);
  } else if (g.inner > 1) {
    backward_strided<T, kCenter>(g, dy, x, mean, rstd, w, dx, partials);
  } else {
    backward_features_last<T, kCenter>(g, dy, x, mean, rstd, w, dx, partials);
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
