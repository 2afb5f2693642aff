// Fused Parallel LN kernels: the drivers, which split the work into parallel
// tasks and pick each row's, group's or chunk's kernel by layout, group size
// and capability, and the formulas. Compiled once per capability with
// PLN_CPU_NS set to its namespace (base: the compiler's default target; avx2:
// AVX2, FMA and F16C; avx512: avx2 plus AVX-512 F/DQ/VL/BW; on aarch64,
// neon: Advanced SIMD, see CMakeLists.txt), and instantiated for each stored
// type S (cpu/storage.h): float and double, and bfloat16 and float16, which
// the same kernels read into float registers and round once on store, so a
// 16-bit result is the float kernel's on the widened input, rounded once.
// Every kernel is a template over the vector vocabulary of kernels/vec.h; the
// capability enters through the vocabulary's types alone (NativeVec,
// SmallGroupVec): no function holds an #if or an intrinsic. Float arithmetic
// is never reassociated, nor contracted: the centring below depends on its
// order, and -ffp-contract=off (CMakeLists.txt) keeps a result's bits those of
// its own code whatever is compiled beside it.
//
// The kernels, one header a path:
//   kernels/large_groups.h   large groups, SIMD within a group, every layout
//   kernels/features_last.h  small groups of contiguous features (NC, NTC, NHWC),
//                            several groups a register
//   kernels/octets.h         float groups of 8 with AVX-512, sixteen a block
//   kernels/strided.h        small groups of the inner-strided layouts (NCHW, NCL)
//   kernels/vec.h            the vector vocabulary (vec_x86.h, vec_neon.h)
//   kernels/streaming.h      when outputs are written around the cache
//
// Group sizes: small groups (below kLargeGroup) put several groups in one
// register: the inner-strided kernels run along the contiguous position axis
// with all g rows of a group in step, and the features-last kernels take
// kLanes groups at a time and reduce them together (float groups of 4 on
// AVX2 eight at a time, transposed; float groups of 8 on AVX-512 sixteen a
// block), as they do features-last float groups of 24 to 64 in rows of whole
// blocks of kLanes groups (register_groups); the sizes and the rest of a row
// that no register holds whole take the same kernels one group at a time
// (ScalarVec). Large groups take SIMD within the group, blocked sums widened
// to double and two passes for the statistics (large_groups.h), so that their
// error does not grow with g; a task then holds whole groups, not whole rows,
// or, where a few groups of 32768 features and more leave threads idle, a run
// of one group's pieces ("split groups" below).
//
// Centring (PLN): every kernel subtracts one of the group's own values, its
// shift s, before anything else. x - s is exact when x and s are close (and
// well-conditioned otherwise), so the mean m of the shifted values and the
// centred values (x - s) - m keep float rounding of the centred values at any
// common offset, where x - mean(x) would round at the offset's magnitude. The
// forward saves mean = s + m (rounded); the backward re-centres x - mean on
// the mean of its own values in the same way.
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
// relu(randn): bench/results/2026-12-05-intel-xeon-groups.md). The output is
// fmadd(xc_j, rstd * weight_j, bias_j) (the inner-strided kernels) or
// fmadd(xc_j * rstd, weight_j, bias_j) (the features-last kernels).
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

#include "cpu/kernels.h"

#include "cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/kernels/features_last.h"
#include "cpu/kernels/large_groups.h"
#include "cpu/kernels/octets.h"
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
// Smaller groups take the kernels that hold several groups in a register;
// from 17 on a group spans two registers.
constexpr int64_t kLargeGroup = 17;

bool large_group(int64_t G) { return G >= kLargeGroup; }

// The largest of the register groups (register_groups).
constexpr int64_t kMaxRegisterGroup = 64;

// Rows of dweight/dbias partial sums kept in T before they are added to the
// double sums: float sums of more rows would lose digits as the batch grows.
constexpr int64_t kParamGradRows = 16;

// Whether the capability writes outputs around the cache at all.
template <typename T>
constexpr bool kStreams = NativeVec<T>::kStreams;

// Features-last float groups of 3 to 8 whole registers (24 to 64 features) in
// rows of whole blocks of kLanes groups: the kernels that hold several groups
// in a register take them, which time below the kernels within a group (one
// thread, model widths, AVX2 and AVX-512: g = 32 forward 0.49-0.96 of their
// time, g = 64 0.72-0.92; g = 128 no faster;
// bench/results/2026-12-05-intel-xeon-groups.md).
template <typename T>
bool register_groups(int64_t G, int64_t NG) {
  constexpr int64_t kL = SmallGroupVec<T>::kLanes;
  return kL > 1 && std::is_same_v<T, float> && G >= kLargeGroup && G <= kMaxRegisterGroup && G % kL == 0 &&
         NG % kL == 0;
}

// Features last: whether groups of G, NG a row, take the kernels within a
// group (large_groups.h) rather than those of several groups a register.
template <typename T>
bool within_group_kernels(int64_t G, int64_t NG) {
  return large_group(G) && !register_groups<T>(G, NG);
}

// f(integral_constant<int, V>) for the V registers of W a group of G spans:
// compile-time for 1, 2 and 4 (the loops over a group unroll), 0 (V read at
// run time) otherwise.
template <typename F>
void with_registers(int64_t V, F f) {
  switch (V) {
    case 1: return f(std::integral_constant<int, 1>());
    case 2: return f(std::integral_constant<int, 2>());
    case 4: return f(std::integral_constant<int, 4>());
    default: return f(std::integral_constant<int, 0>());
  }
}

// ------------------------------------------------------- features last ---

// Groups [k, ...) of one row through the kernels across groups of W: float
// groups of 4 eight at a time (quads, where W has them), groups of a whole
// number of registers kLanes at a time (with ScalarVec: every group, one at
// a time). The statistics of the blocks first, then the outputs: the blocks'
// long reduce-sqrt-divide chains are independent and overlap, where
// computing each block's output right after its statistics would wait on
// them. Returns the first group the kernels leave.
// `shifted` is a scratch of NG values for the shifted means; save_stats: mean
// and rstd are wanted after the call.
template <typename W, bool kCenter, typename S>
int64_t forward_row_across(int64_t k, const S* x, S* y, int64_t NG, int64_t G, const value_t<W>* w,
                           const value_t<W>* b, value_t<W>* mean, value_t<W>* rstd, value_t<W>* shifted,
                           value_t<W> eps, bool save_stats, bool stream) {
  constexpr int kL = W::kLanes;
  const int64_t k0 = k;
  if constexpr (kHasQuads<W>) {
    if (G == 4) {
      for (; k + 8 <= NG; k += 8) stats_quads<W, kCenter>(x + 4 * k, mean + k, shifted + k, rstd + k, eps);
      const auto apply = stream ? apply_quads<W, kCenter, true, S> : apply_quads<W, kCenter, false, S>;
      for (int64_t q = k0; q < k; q += 8) apply(x + 4 * q, y + 4 * q, w + 4 * q, b + 4 * q, shifted + q, rstd + q);
      return k;
    }
  }
  if (G % kL != 0) return k;
  with_registers(G / kL, [&](auto v_const) {
    constexpr int kV = decltype(v_const)::value;
    for (; k + kL <= NG; k += kL) {
      if constexpr (kV == 1 && kL > 1) {
        stats_transposed<W, kCenter>(x + k * G, shifted + k, rstd + k, eps);
      } else {
        stats_groups<W, kCenter, kV>(x + k * G, shifted + k, rstd + k, G / kL, eps);
      }
    }
    const auto apply = stream ? apply_groups<W, kCenter, kV, true, S> : apply_groups<W, kCenter, kV, false, S>;
    apply(x + k0 * G, y + k0 * G, w + k0 * G, b + k0 * G, shifted + k0, rstd + k0, save_stats ? mean + k0 : nullptr,
          k - k0, G / kL);
  });
  return k;
}

template <typename W, bool kCenter, typename S>
int64_t backward_row_across(int64_t k, const S* dy, const S* x, int64_t NG, int64_t G, const value_t<W>* mean,
                            const value_t<W>* rstd, const value_t<W>* w, S* dx, value_t<W>* dw,
                            value_t<W>* db) {
  constexpr int kL = W::kLanes;
  if constexpr (kHasQuads<W>) {
    if (G == 4) {
      for (; k + 8 <= NG; k += 8) {
        backward_quads<W, kCenter>(dy + 4 * k, x + 4 * k, mean + k, rstd + k, w + 4 * k, dx ? dx + 4 * k : nullptr,
                                   dw ? dw + 4 * k : nullptr, db ? db + 4 * k : nullptr);
      }
      return k;
    }
  }
  if (G % kL != 0) return k;
  with_registers(G / kL, [&](auto v_const) {
    constexpr int kV = decltype(v_const)::value;
    for (; k + kL <= NG; k += kL) {
      const int64_t o = k * G;
      backward_groups<W, kCenter, kV>(dy + o, x + o, mean + k, rstd + k, w + o, dx ? dx + o : nullptr,
                                      dw ? dw + o : nullptr, db ? db + o : nullptr, G / kL);
    }
  });
  return k;
}

// One row of NG groups of G contiguous features: the AVX-512 octet blocks
// (float groups of 8, sixteen a block: one block ahead, as their blocks are
// twice as large and keep their values in registers for the output), then
// the kernels across groups of SmallGroupVec, then the rest one group at a
// time. stream: the output is written around the cache (y aligned, see
// kStreamBytes); the caller fences.
template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_row(const S* x, S* y, int64_t NG, int64_t G, const T* w, const T* b, T* mean, T* rstd, T* shifted,
                 T eps, bool save_stats, bool stream) {
  int64_t k = 0;
  using N = NativeVec<T>;
  if constexpr (kHasOctets<N>) {
    if (G == 8) {
      k = NG / 16 * 16;
      (save_stats ? forward_octet_blocks<N, kCenter, true, false, S> : forward_octet_blocks<N, kCenter, false, false, S>)(
          x, y, w, b, mean, rstd, k / 16, k / 16, eps);
    }
  }
  k = forward_row_across<SmallGroupVec<T>, kCenter>(k, x, y, NG, G, w, b, mean, rstd, shifted, eps, save_stats, stream);
  forward_row_across<ScalarVec<T>, kCenter>(k, x, y, NG, G, w, b, mean, rstd, shifted, eps, save_stats, false);
}

// Rows [begin, end) of float groups of 8 whose rows are whole blocks of sixteen
// groups, through the AVX-512 octet blocks in one pipeline; whether they took them.
template <typename S, bool kCenter, typename T = compute_t<S>>
bool forward_rows_octets(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps,
                         int64_t begin, int64_t end, bool stream) {
  using N = NativeVec<T>;
  if constexpr (kHasOctets<N>) {
    const int64_t C = g.channels, NG = g.num_groups();
    if (g.group != 8 || C % 128 != 0) return false;
    const int64_t n = (end - begin) * C / 128;
    T* const mean_o = mean ? mean + begin * NG : nullptr;
    T* const rstd_o = mean ? rstd + begin * NG : nullptr;
    const auto blocks = stream ? (mean ? forward_octet_blocks<N, kCenter, true, true, S>
                                       : forward_octet_blocks<N, kCenter, false, true, S>)
                               : (mean ? forward_octet_blocks<N, kCenter, true, false, S>
                                       : forward_octet_blocks<N, kCenter, false, false, S>);
    blocks(x + begin * C, y + begin * C, w, b, mean_o, rstd_o, n, C / 128, eps);
    if (stream) N::stream_fence();
    return true;
  }
  return false;
}

// Features last, small groups: each task takes whole rows.
template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_small_rows(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  const int64_t NG = g.num_groups(), C = g.channels, G = g.group;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / C);
  const bool stream = kStreams<T> && streams_output(y, C, g.numel());
  const bool stream_octets = kStreams<T> && streams_output(y, C, g.numel(), 64, kStreamOctetForwardBytes);
  parallel_for(0, g.outer, grain, [&](int64_t begin, int64_t end) {
    if (forward_rows_octets<S, kCenter>(g, x, w, b, y, mean, rstd, eps, begin, end, stream_octets)) return;
    // Without saved statistics, each row's go to a scratch that stays in L1.
    std::vector<T> scratch(static_cast<size_t>(mean ? NG : 3 * NG));
    for (int64_t o = begin; o < end; ++o) {
      T* mean_o = mean ? mean + o * NG : scratch.data() + NG;
      T* rstd_o = rstd ? rstd + o * NG : scratch.data() + 2 * NG;
      forward_row<S, kCenter>(x + o * C, y + o * C, NG, G, w, b, mean_o, rstd_o, scratch.data(), eps,
                              mean != nullptr, stream);
    }
    if (stream) NativeVec<T>::stream_fence();
  });
}

// Features last, large groups: each task takes whole groups, so that a batch of
// a few rows still splits across the threads.
template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_large_groups(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  const int64_t NG = g.num_groups(), G = g.group;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / G);
  using V = NativeVec<T>;
  const bool mid = mid_size_group<V>(G);
  const bool stream = kStreams<T> && streams_output(y, G, g.numel(), int64_t(sizeof(S)) * V::kLanes);
  parallel_for(0, g.outer * NG, grain, [&](int64_t begin, int64_t end) {
    // Instance s (row s / NG, group k = s % NG) starts at x + s * G.
    if (mid) {
      forward_mid_groups<V, kCenter>(x, y, G, NG, w, b, mean, rstd, eps, begin, end, stream);
    } else {
      for (int64_t s = begin; s < end; ++s) {
        const int64_t k = s % NG;
        T m, r;
        const S* next = s + 1 < end ? x + (s + 1) * G : nullptr;
        forward_large_group<V, kCenter>(x + s * G, y + s * G, G, w + k * G, b + k * G, m, r, eps, next, stream);
        if (mean) mean[s] = m, rstd[s] = r;
      }
    }
    if (stream) V::stream_fence();
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
    const int64_t threads = num_threads(), pieces = pieces_of(G);
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
  if (g.inner != 1 || g.group < kSplitGroup || in_parallel_region()) return false;
  const int64_t threads = num_threads(), groups = g.outer * g.num_groups();
  return groups < threads || (backward && g.outer <= kFewRows);
}

// One parallel loop over a plan's tasks: body(u, p) for every piece of each.
template <typename Body>
void for_each_piece(const SplitPlan& plan, Body body) {
  parallel_for(0, plan.groups * plan.runs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) plan.for_pieces(t, body);
  });
}

template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_split_groups(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  using V = NativeVec<T>;
  const int64_t G = g.group, NG = g.num_groups();
  const SplitPlan plan = SplitPlan::over(g.outer * NG, G);
  std::vector<T> shift(static_cast<size_t>(plan.groups)), m(shift.size(), T(0)), r(shift.size());
  for (int64_t u = 0; u < plan.groups; ++u) shift[u] = kCenter ? widen(x[u * G]) : T(0);
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

// ------------------------------------------------------- inner-strided ---

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

template <typename S>
StridedPlan strided_plan(const Geometry& g, const S* out) {
  using T = compute_t<S>;
  const bool large = large_group(g.group);
  return {std::max<int64_t>(1, kGrainElements / (g.group * g.inner)), large ? slab_positions<T>(g.group) : kChunk,
          large, kStreams<T> && streams_output(out, g.inner, g.numel())};
}

template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_strided(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  const StridedPlan plan = strided_plan(g, y);
  const int64_t chunk = plan.chunk;
  const bool large = plan.large;
  const auto small_chunk = plan.stream ? forward_chunk<SmallGroupVec<T>, kCenter, true, S>
                                       : forward_chunk<SmallGroupVec<T>, kCenter, false, S>;
  parallel_for(0, g.outer * NG, plan.grain, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(mean ? 0 : static_cast<size_t>(2 * chunk));
    std::vector<double> sums(large ? static_cast<size_t>(2 * chunk) : 0);
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / NG, k = s % NG;
      const int64_t off = (o * C + k * G) * I;
      for (int64_t i0 = 0; i0 < I; i0 += chunk) {
        const int64_t n = std::min(chunk, I - i0);
        T* mean_s = mean ? mean + s * I + i0 : scratch.data();
        T* rstd_s = rstd ? rstd + s * I + i0 : scratch.data() + chunk;
        const S* xs = x + off + i0;
        S* ys = y + off + i0;
        if (large) {
          const int64_t ahead = next_slab(i0, chunk, I, G, s + 1 < end);
          forward_large_slab<NativeVec<T>, kCenter>(xs, ys, I, n, G, w + k * G, b + k * G, mean_s, rstd_s, eps,
                                                     sums.data(), ahead ? xs + ahead : nullptr);
        } else {
          small_chunk(xs, ys, I, n, G, w + k * G, b + k * G, mean_s, rstd_s, eps, next_chunk(i0, I, G, s + 1 < end));
        }
      }
    }
    if (plan.stream) NativeVec<T>::stream_fence();
  });
}

// Groups of one value: elementwise (forward_ones), in tasks of whole rows.
template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_groups_of_one(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  const int64_t C = g.channels, I = g.inner;
  parallel_for(0, g.outer, std::max<int64_t>(1, kGrainElements / (C * I)), [&](int64_t begin, int64_t end) {
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

template <typename S, bool kCenter, typename T = compute_t<S>>
void forward_impl(const Geometry& g, const S* x, const T* w, const T* b, S* y, T* mean, T* rstd, T eps) {
  if (g.numel() == 0) return;
  if (g.group == 1) return forward_groups_of_one<S, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (g.inner > 1) return forward_strided<S, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (splits_groups(g, false)) return forward_split_groups<S, kCenter>(g, x, w, b, y, mean, rstd, eps);
  if (within_group_kernels<T>(g.group, g.num_groups())) {
    return forward_large_groups<S, kCenter>(g, x, w, b, y, mean, rstd, eps);
  }
  forward_small_rows<S, kCenter>(g, x, w, b, y, mean, rstd, eps);
}

// ------------------------------------------------------------ backward ---

// [C] partial sums for dweight and dbias a task (parallel_tasks), added up
// at the end in the order of the tasks.
struct ParamGradPartials {
  ParamGradPartials(int64_t channels, bool wanted)
      : C(channels), wanted(wanted),
        sums(wanted ? static_cast<size_t>(2 * channels * num_threads()) : 0, 0.0) {}
  double* dweight(int64_t task) { return wanted ? sums.data() + 2 * C * task : nullptr; }
  double* dbias(int64_t task) { return wanted ? dweight(task) + C : nullptr; }
  // Adds a task's sums in T (the first `2 * C` values of local: dweight, then
  // dbias) to its partial sums, and clears them.
  template <typename T>
  void flush(int64_t task, std::vector<T>& local) {
    if (!wanted) return;
    double* p = dweight(task);
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

// One row, as forward_row. stream: the AVX-512 octet blocks' dx is written
// around the cache (see backward_octet_blocks); the caller fences.
template <typename S, bool kCenter, typename T = compute_t<S>>
void backward_row(const S* dy, const S* x, int64_t NG, int64_t G, const T* mean, const T* rstd, const T* w, S* dx,
                  T* dw, T* db, bool stream) {
  int64_t k = 0;
  using N = NativeVec<T>;
  if constexpr (kHasOctets<N>) {
    if (G == 8) {
      k = NG / 16 * 16;
      (stream ? backward_octet_blocks<N, kCenter, true, S> : backward_octet_blocks<N, kCenter, false, S>)(
          dy, x, mean, rstd, w, dx, dw, db, k / 16);
    }
  }
  k = backward_row_across<SmallGroupVec<T>, kCenter>(k, dy, x, NG, G, mean, rstd, w, dx, dw, db);
  backward_row_across<ScalarVec<T>, kCenter>(k, dy, x, NG, G, mean, rstd, w, dx, dw, db);
}

// Features last: tasks of whole rows (small groups) or whole groups (large
// ones); dweight/dbias summed in T over at most kParamGradRows rows, then in
// double.
template <typename S, bool kCenter, typename T = compute_t<S>>
void backward_features_last(const Geometry& g, const S* dy, const S* x, const T* mean, const T* rstd, const T* w,
                            S* dx, ParamGradPartials& partials) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels;
  using V = NativeVec<T>;
  const bool large = within_group_kernels<T>(G, NG), mid = mid_size_group<V>(G);
  // Tasks take rows (small groups) or groups (large ones): `units` of `per_unit` values.
  const int64_t units = large ? g.outer * NG : g.outer, per_unit = large ? G : C;
  const int64_t flush_every = kParamGradRows * (large ? NG : 1);
  const bool stream = kStreams<T> && std::is_same_v<T, float> && G == 8 && streams_octet_backward() &&
                      streams_output(dx, C, g.numel(), 64);
  parallel_tasks(0, units, std::max<int64_t>(1, kGrainElements / per_unit), [&](int64_t task, int64_t begin, int64_t end) {
    std::vector<T> local(partials.wanted ? static_cast<size_t>(2 * C) : 0, T(0));
    T* dw = partials.wanted ? local.data() : nullptr;
    T* db = partials.wanted ? local.data() + C : nullptr;
    int64_t since_flush = 0;
    for (int64_t u = begin; u < end;) {
      int64_t done = 1;
      if (large) {
        // Instance u (row u / NG, group k = u % NG) starts at u * G.
        const int64_t k = u % NG, off = u * G;
        S* const dx_u = dx ? dx + off : nullptr;
        T* const dw_k = dw ? dw + k * G : nullptr;
        T* const db_k = db ? db + k * G : nullptr;
        if (mid && u + kMidBatch <= end && k + kMidBatch <= NG) {
          // Unlike the forward's, the backward's batches stay within a row,
          // the rest of a row taking the kernel of one group: batches that
          // ran on into the next row were up to 1.4x slower out of cache in
          // rows of fewer than a batch of groups of 128 and 256 floats.
          const bool more = u + 2 * kMidBatch <= end;  // the next batch is prefetched whole
          int64_t offset[kMidBatch];
          weight_offsets(u, NG, G, offset);
          backward_mid_groups<V, kCenter, kMidBatch>(dy + off, x + off, G, mean + u, rstd + u, w, offset, dx_u, dw, db,
                                                     more ? x + off + kMidBatch * G : nullptr,
                                                     more ? dy + off + kMidBatch * G : nullptr);
          done = kMidBatch;
        } else {
          const bool more = u + 1 < end;
          backward_large_group<V, kCenter>(dy + off, x + off, G, mean[u], rstd[u], w + k * G, dx_u, dw_k, db_k,
                                           more ? x + off + G : nullptr, more ? dy + off + G : nullptr);
        }
      } else {
        backward_row<S, kCenter>(dy + u * C, x + u * C, NG, G, mean + u * NG, rstd + u * NG, w,
                                 dx ? dx + u * C : nullptr, dw, db, stream);
      }
      u += done;
      since_flush += done;
      if (since_flush >= flush_every) partials.flush(task, local), since_flush = 0;
    }
    if (stream) V::stream_fence();
    partials.flush(task, local);
  });
}

// The backward of split groups (see forward_split_groups). The last pass
// runs over (features' group k, run) tasks, each taking its pieces in every row,
// so that each feature's dweight/dbias is summed by one task: in T over at
// most kParamGradRows rows, then in double (as backward_features_last does),
// and written to dweight/dbias directly (no per-thread sums of C values,
// which would outweigh a few rows of wide groups).
template <typename S, bool kCenter, typename T = compute_t<S>>
void backward_split_groups(const Geometry& g, const S* dy, const S* x, const T* mean, const T* rstd, const T* w,
                           S* dx, double* dweight, double* dbias) {
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
  parallel_for(0, NG * by_feature.runs, 1, [&](int64_t begin, int64_t end) {
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

template <typename S, bool kCenter, typename T = compute_t<S>>
void backward_strided(const Geometry& g, const S* dy, const S* x, const T* mean, const T* rstd, const T* w, S* dx,
                      ParamGradPartials& partials) {
  const int64_t G = g.group, NG = g.num_groups(), C = g.channels, I = g.inner;
  const StridedPlan plan = strided_plan(g, dx);
  const int64_t chunk = plan.chunk;
  const bool large = plan.large;
  const auto small_chunk = plan.stream ? backward_chunk<SmallGroupVec<T>, kCenter, true, S>
                                       : backward_chunk<SmallGroupVec<T>, kCenter, false, S>;
  parallel_tasks(0, g.outer * NG, plan.grain, [&](int64_t task, int64_t begin, int64_t end) {
    double* dw = partials.dweight(task);
    double* db = partials.dbias(task);
    std::vector<double> sums(large ? static_cast<size_t>(3 * chunk) : 0);
    std::vector<T> coef(large ? static_cast<size_t>(3 * chunk) : 0);
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / NG, k = s % NG;
      const int64_t off = (o * C + k * G) * I;
      for (int64_t i0 = 0; i0 < I; i0 += chunk) {
        const int64_t n = std::min(chunk, I - i0);
        double* dw_k = dw ? dw + k * G : nullptr;
        double* db_k = db ? db + k * G : nullptr;
        S* dx_s = dx ? dx + off + i0 : nullptr;
        const S* dys = dy + off + i0;
        const S* xs = x + off + i0;
        const T* mean_s = mean + s * I + i0;
        const T* rstd_s = rstd + s * I + i0;
        if (large) {
          const int64_t ahead = next_slab(i0, chunk, I, G, s + 1 < end);
          backward_large_slab<NativeVec<T>, kCenter>(dys, xs, I, n, G, mean_s, rstd_s, w + k * G, dx_s, dw_k, db_k,
                                                      sums.data(), coef.data(), ahead ? xs + ahead : nullptr,
                                                      ahead ? dys + ahead : nullptr);
        } else {
          small_chunk(dys, xs, I, n, G, mean_s, rstd_s, w + k * G, dx_s, dw_k, db_k, next_chunk(i0, I, G, s + 1 < end));
        }
      }
    }
    if (plan.stream) NativeVec<T>::stream_fence();
  });
}

// A centred group of one value normalises to 0 whatever the value (y = bias),
// so dx and dweight are 0 and dbias sums dy: written out rather than left to
// the formula, whose gy - mean(gy) a fused multiply-add leaves at a rounding
// error of gy, which rstd = 1/sqrt(eps) then multiplies.
template <typename S>
void backward_groups_of_one(const Geometry& g, const S* dy, S* dx, ParamGradPartials& partials) {
  using T = compute_t<S>;
  const int64_t C = g.channels, I = g.inner;
  // dx in a few large pieces, whose fills the C library writes around the cache.
  if (dx) {
    parallel_for(0, g.numel(), kFillGrain, [&](int64_t begin, int64_t end) {
      std::fill(dx + begin, dx + end, narrow<S>(T(0)));
    });
  }
  if (!partials.wanted) return;
  parallel_tasks(0, g.outer, std::max<int64_t>(1, kGrainElements / (C * I)), [&](int64_t task, int64_t begin, int64_t end) {
    double* db = partials.dbias(task);
    for (int64_t o = begin; o < end; ++o) {
      const S* dy_o = dy + o * C * I;
      if (I == 1) {
        for (int64_t c = 0; c < C; ++c) db[c] += static_cast<double>(widen(dy_o[c]));
        continue;
      }
      // A plane in blocked sums: a sequential double sum waits an add's latency a value.
      for (int64_t c = 0; c < C; ++c) {
        const S* plane = dy_o + c * I;
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

template <typename S, bool kCenter, typename T = compute_t<S>>
void backward_impl(const Geometry& g, const S* dy, const S* x, const T* mean, const T* rstd, const T* w, S* dx,
                   double* dweight, double* dbias) {
  if (g.numel() == 0) {
    if (dweight) std::fill(dweight, dweight + g.channels, 0.0);
    if (dbias) std::fill(dbias, dbias + g.channels, 0.0);
    return;
  }
  if (splits_groups(g, true)) return backward_split_groups<S, kCenter>(g, dy, x, mean, rstd, w, dx, dweight, dbias);
  ParamGradPartials partials(g.channels, dweight != nullptr || dbias != nullptr);
  if (kCenter && g.group == 1) {
    backward_groups_of_one(g, dy, dx, partials);
  } else if (g.inner > 1) {
    backward_strided<S, kCenter>(g, dy, x, mean, rstd, w, dx, partials);
  } else {
    backward_features_last<S, kCenter>(g, dy, x, mean, rstd, w, dx, partials);
  }
  partials.reduce_into(dweight, dbias);
}

}  // namespace

template <typename S>
void forward(const Geometry& g, const S* x, const compute_t<S>* w, const compute_t<S>* b, S* y, compute_t<S>* mean,
             compute_t<S>* rstd, double eps, bool centering) {
  using T = compute_t<S>;
  (centering ? forward_impl<S, true> : forward_impl<S, false>)(g, x, w, b, y, mean, rstd, static_cast<T>(eps));
}

template <typename S>
void backward(const Geometry& g, const S* dy, const S* x, const compute_t<S>* mean, const compute_t<S>* rstd,
              const compute_t<S>* w, bool centering, S* dx, double* dw, double* db) {
  (centering ? backward_impl<S, true> : backward_impl<S, false>)(g, dy, x, mean, rstd, w, dx, dw, db);
}

#define PLN_INSTANTIATE(S)                                                                                      \
  template void forward<S>(const Geometry&, const S*, const compute_t<S>*, const compute_t<S>*, S*, compute_t<S>*, \
                           compute_t<S>*, double, bool);                                                         \
  template void backward<S>(const Geometry&, const S*, const S*, const compute_t<S>*, const compute_t<S>*,       \
                            const compute_t<S>*, bool, S*, double*, double*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
PLN_INSTANTIATE(bfloat16)
PLN_INSTANTIATE(float16)
#undef PLN_INSTANTIATE

}  // namespace pln::cpu::PLN_CPU_NS
