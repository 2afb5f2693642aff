#pragma once
// Large groups (tens to thousands of features): SIMD within one group rather
// than across groups, written once against the vector vocabulary of
// kernels/vec.h and instantiated per capability with its NativeVec (the tail
// of a group past the last whole register takes ScalarVec: the same code).
//
// Sums are blocked (mid-size groups, below, need no widening: each lane adds
// at most kMidRegisters values): each lane of kUnroll float registers adds at most
// kFlushSteps values, then the registers are widened and added to double
// lanes, so the error of a sum does not grow with g (a sequential float sum of
// g values loses digits in proportion to g; ATen's LayerNorm uses a cascade
// for the same reason). Statistics take two passes over each piece of 4096
// features, which stays in L1 between them: the mean of the shifted values,
// then the sum of squares of the centred values themselves, so nothing
// cancels (a one-pass mean(d^2) - m^2 loses what the shift s = x_0 leaves to
// cancel, up to a factor 1 + ((x_0 - mean) / std)^2); the pieces' moments are
// then merged exactly (Chan, Golub and LeVeque's update), so a group larger
// than the cache is read from memory once for its statistics and once for
// its output. Formulas: see cpu/kernels.cpp.
//
// Part of the fused kernels of src/cpu/kernels.cpp and src/cpu/gated_kernels.cpp,
// inside their per-capability namespace.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/capability.h"
#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// A pointer parameter of a kernel's storage type S that does not take part
// in deducing S (a next group's pointer may be a literal nullptr).
template <typename S>
struct Identity {
  using type = S;
};
template <typename S>
using NoDeduce = typename Identity<S>::type;

// Independent accumulators per sum: enough to cover the latency of an add.
constexpr int kUnroll = 4;
// Unrolled steps between widenings to double: each float partial sums at most
// this many values, so its rounding stays at a few units whatever g is.
constexpr int kFlushSteps = 8;

// K sums over features [begin, end) of one group: terms(W, j, acc) adds the K
// terms of features j .. j + W::kLanes - 1 into acc[0..K) for a vocabulary
// type W. Returns the sums in double.
template <typename V, int K, typename Terms>
inline void blocked_sums(int64_t begin, int64_t end, Terms terms, double (&out)[K]) {
  using T = typename V::Value;
  using R = typename V::V;
  constexpr int L = V::kLanes;
  static_assert(kUnroll == 4, "the unrolled partials are added in pairs below");
  typename V::Wide wide[K];
  for (int k = 0; k < K; ++k) wide[k] = V::wide_zero();
  int64_t j = begin;
  while (j + kUnroll * L <= end) {
    R acc[kUnroll][K];
    for (int u = 0; u < kUnroll; ++u)
      for (int k = 0; k < K; ++k) acc[u][k] = V::zero();
    for (int step = 0; step < kFlushSteps && j + kUnroll * L <= end; ++step, j += kUnroll * L) {
      for (int u = 0; u < kUnroll; ++u) terms(V(), j + u * L, acc[u]);
    }
    for (int k = 0; k < K; ++k) {
      V::widen_add(wide[k], V::add(V::add(acc[0][k], acc[1][k]), V::add(acc[2][k], acc[3][k])));
    }
  }
  if (j + L <= end) {
    R acc[K];
    for (int k = 0; k < K; ++k) acc[k] = V::zero();
    for (; j + L <= end; j += L) terms(V(), j, acc);
    for (int k = 0; k < K; ++k) V::widen_add(wide[k], acc[k]);
  }
  for (int k = 0; k < K; ++k) out[k] = V::wide_sum(wide[k]);
  for (; j < end; ++j) {
    T acc[K] = {};
    terms(ScalarVec<T>(), j, acc);
    for (int k = 0; k < K; ++k) out[k] += static_cast<double>(acc[k]);
  }
}

// A group's sums are taken a piece of kPiece features at a time, and the
// pieces' double sums added in order. A group split across threads
// (kernels.cpp's split drivers) sums each piece on its own and adds them in
// the same order, so its statistics are those of the group taken whole, bit
// for bit, however many threads ran it. Groups of up to kPiece features are
// one piece (the blocked sums above, as they were before pieces).
constexpr int64_t kPiece = 4096;

inline int64_t pieces_of(int64_t G) { return (G + kPiece - 1) / kPiece; }

// The features [begin, end) of piece p of a group of G.
inline int64_t piece_begin(int64_t p) { return p * kPiece; }
inline int64_t piece_end(int64_t p, int64_t G) { return std::min(G, (p + 1) * kPiece); }

// Sums over a whole group of G features, piece by piece: sum(begin, end, out)
// takes one piece's K sums.
template <int K, typename PieceSums>
inline void piecewise_sums(int64_t G, PieceSums sum, double (&out)[K]) {
  for (int k = 0; k < K; ++k) out[k] = 0.0;
  for (int64_t p = 0; p < pieces_of(G); ++p) {
    double part[K];
    sum(piece_begin(p), piece_end(p, G), part);
    for (int k = 0; k < K; ++k) out[k] += part[k];
  }
}

// --------------------------------------------- one group, features last ---
// The forward of a group of G contiguous features takes two sweeps, each a
// function of a range of its features so that a split group runs them piece
// by piece: the statistics (PLN: each piece's moments, two passes over the
// piece in L1; PLS: the sum of squares), and the output. Scalar twin:
// forward_groups (kernels/features_last.h).

// sum_j (x_j - s) over [begin, end).
template <typename V, typename S>
inline void shifted_sum(const S* x, typename V::Value s, int64_t begin, int64_t end,
                        double (&out)[1]) {
  blocked_sums<V, 1>(begin, end, [&](auto w_, int64_t j, auto* acc) {
    using W = decltype(w_);
    acc[0] = W::add(acc[0], W::sub(W::load(x + j), W::set1(s)));
  }, out);
}

// sum_j ((x_j - s) - m)^2 over [begin, end) (PLS: sum_j x_j^2).
template <typename V, bool kCenter, typename S>
inline void centred_squares(const S* x, typename V::Value s, typename V::Value m, int64_t begin,
                            int64_t end, double (&out)[1]) {
  blocked_sums<V, 1>(begin, end, [&](auto w_, int64_t j, auto* acc) {
    using W = decltype(w_);
    const auto d = kCenter ? W::sub(W::sub(W::load(x + j), W::set1(s)), W::set1(m)) : W::load(x + j);
    acc[0] = W::fmadd(d, d, acc[0]);
  }, out);
}

// The moments of the features [begin, end) of a group shifted by s, for
// statistics taken in one sweep over memory: n, the sum of d_j = x_j - s, and
// the sum of squares about the piece's own mean a (rounded to T), in two
// passes over a piece that stays in L1 between them.
struct PieceMoments {
  double n, sum, squares, a;
};

template <typename V, typename S>
inline PieceMoments piece_moments(const S* x, typename V::Value s, int64_t begin, int64_t end) {
  using T = typename V::Value;
  PieceMoments piece{static_cast<double>(end - begin), 0.0, 0.0, 0.0};
  double out[1];
  shifted_sum<V>(x, s, begin, end, out);
  piece.sum = out[0];
  const T a = static_cast<T>(piece.sum / piece.n);
  centred_squares<V, true>(x, s, a, begin, end, out);
  piece.squares = out[0];
  piece.a = static_cast<double>(a);
  return piece;
}

// A group's moments, its pieces merged in order: the sum of the shifted
// values, and the sum of squares about their mean, each piece's moved from its
// rounded mean a to its exact one (sum (d - a)^2 = sum (d - mu)^2 + n (a - mu)^2)
// and then to the group's, all in double, so nothing cancels.
struct GroupMoments {
  double n = 0, sum = 0, mean = 0, squares = 0;
  void add(const PieceMoments& p) {
    const double mu = p.sum / p.n, total = n + p.n, delta = mu - mean;
    squares += (p.squares - p.n * (p.a - mu) * (p.a - mu)) + delta * delta * (n * p.n / total);
    mean += delta * (p.n / total);
    sum += p.sum;
    n = total;
  }
};

// The group's statistics from its sums: the shifted mean m from sum_j (x_j - s),
// rstd from the sum of squares.
template <typename T>
inline T mean_of(double shifted_sum, int64_t G) {
  return static_cast<T>(shifted_sum / static_cast<double>(G));
}
template <typename T>
inline T rstd_of(double squares, int64_t G, double eps) {
  return static_cast<T>(1.0 / std::sqrt(squares / static_cast<double>(G) + eps));
}

// y_j = ((x_j - s) - m) * r * w_j + b_j over [begin, end); next: see forward_large_group.
// x and y may be stored differently (the gated norm's float scratches).
template <typename V, bool kCenter, typename S, typename Y>
inline void write_normalised(const S* x, Y* y, int64_t begin, int64_t end,
                             typename V::Value s, typename V::Value m, typename V::Value r,
                             const typename V::Value* w, const typename V::Value* b, const NoDeduce<S>* next,
                             bool stream) {
  for_each_register<V>(begin, end, [&](auto w_, int64_t j) {
    using W = decltype(w_);
    if (next) __builtin_prefetch(next + j);
    const auto d = kCenter ? W::sub(W::sub(W::load(x + j), W::set1(s)), W::set1(m)) : W::load(x + j);
    const auto out = W::fmadd(W::mul(d, W::set1(r)), W::load(w + j), W::load(b + j));
    stream ? W::stream(y + j, out) : W::store(y + j, out);
  });
}

// A whole group's statistics: its shift s (PLN: its first value), the mean m of
// the shifted values and rstd; PLN's from its pieces' moments, PLS's from the
// sum of squares taken piece by piece.
template <typename V, bool kCenter, typename S>
inline void group_statistics(const S* x, int64_t G, double eps, typename V::Value& s,
                             typename V::Value& m, typename V::Value& rstd) {
  using T = typename V::Value;
  s = kCenter ? widen(x[0]) : T(0);
  m = T(0);
  if (kCenter) {
    GroupMoments group;
    for (int64_t p = 0; p < pieces_of(G); ++p) group.add(piece_moments<V>(x, s, piece_begin(p), piece_end(p, G)));
    m = mean_of<T>(group.sum, G);
    rstd = rstd_of<T>(group.squares, G, eps);
    return;
  }
  double sum[1];
  piecewise_sums<1>(G, [&](int64_t begin, int64_t end, double (&out)[1]) {
    centred_squares<V, false>(x, s, m, begin, end, out);
  }, sum);
  rstd = rstd_of<T>(sum[0], G, eps);
}

// The forward of one whole group: y from x, weight and bias of the same G
// features; returns the saved mean and rstd through `mean`/`rstd`.
// next: the group the task takes next (or null), fetched into the cache while
// this one is written: the passes over a group in L1 leave the memory idle,
// and the hardware prefetchers stop with the demand stream. stream: y is
// written around the cache (every group's start aligned to the register size
// and the output too large to stay in cache; see kernels/streaming.h).
template <typename V, bool kCenter, typename S>
inline void forward_large_group(const S* x, S* y, int64_t G,
                                const typename V::Value* w, const typename V::Value* b,
                                typename V::Value& mean, typename V::Value& rstd, double eps,
                                const NoDeduce<S>* next, bool stream) {
  using T = typename V::Value;
  T s, m, r;
  group_statistics<V, kCenter>(x, G, eps, s, m, r);
  write_normalised<V, kCenter>(x, y, 0, G, s, m, r, w, b, next, stream);
  mean = kCenter ? s + m : T(0);
  rstd = r;
}

// The backward of one group, in two passes over a range of its features each:
//   d = x - mean (saved), b = mean_j(d) (the saved mean's rounding), y = (d - b) * rstd
//   dx = rstd * (gy - mean_j(gy) - y * mean_j(gy * y)),  gy = dy * w   (PLS: no mean_j(gy), b = 0)
// Scalar twin: backward_groups.

// sum gy, sum d, sum gy * d over [begin, end).
template <typename V, bool kCenter, typename S>
inline void backward_sums(const S* dy, const S* x, typename V::Value mean,
                          const typename V::Value* w, int64_t begin, int64_t end, double (&out)[3]) {
  blocked_sums<V, 3>(begin, end, [&](auto w_, int64_t j, auto* acc) {
    using W = decltype(w_);
    const auto d = W::sub(W::load(x + j), W::set1(mean));
    const auto gy = W::mul(W::load(dy + j), W::load(w + j));
    acc[0] = W::add(acc[0], gy);
    if (kCenter) acc[1] = W::add(acc[1], d);
    acc[2] = W::fmadd(gy, d, acc[2]);
  }, out);
}

// dx_j = rstd * ((gy_j - a) - y_j * c), y_j = (d_j - b) * rstd.
template <typename T>
struct BackwardCoefficients {
  T a, b, c;
};

template <typename T, bool kCenter>
inline BackwardCoefficients<T> backward_coefficients(const double (&sums)[3], int64_t G, T rstd) {
  const double inv_g = 1.0 / static_cast<double>(G);
  const double mean_gy = sums[0] * inv_g, mean_d = kCenter ? sums[1] * inv_g : 0.0;
  return {kCenter ? static_cast<T>(mean_gy) : T(0), static_cast<T>(mean_d),
          static_cast<T>(rstd * (sums[2] * inv_g - mean_d * mean_gy))};
}

// dx, and dw/db (may be null: partial sums for the same features, added to),
// over [begin, end); next_x/next_dy: the next group's (or null), prefetched
// as in the forward. PLS has no a to subtract: written out rather than left
// to a - 0, which the compiler folds where a is a known zero and not where it
// is read from memory, and which then fuses the rest into another FMA.
template <typename V, bool kCenter, typename S>
inline void write_backward(const S* dy, const S* x, int64_t begin, int64_t end,
                           typename V::Value mean, typename V::Value rstd, const typename V::Value* w,
                           const BackwardCoefficients<typename V::Value>& k, S* dx,
                           typename V::Value* dw, typename V::Value* db, const NoDeduce<S>* next_x,
                           const NoDeduce<S>* next_dy) {
  for_each_register<V>(begin, end, [&](auto w_, int64_t j) {
    using W = decltype(w_);
    if (next_x) __builtin_prefetch(next_x + j), __builtin_prefetch(next_dy + j);
    const auto dyv = W::load(dy + j);
    const auto yv = W::mul(W::sub(W::sub(W::load(x + j), W::set1(mean)), W::set1(k.b)), W::set1(rstd));
    if (dx) {
      const auto gy = W::mul(dyv, W::load(w + j));
      const auto gy_a = kCenter ? W::sub(gy, W::set1(k.a)) : gy;
      W::store(dx + j, W::mul(W::set1(rstd), W::sub(gy_a, W::mul(yv, W::set1(k.c)))));
    }
    if (dw) {
      W::store(dw + j, W::fmadd(dyv, yv, W::load(dw + j)));
      W::store(db + j, W::add(dyv, W::load(db + j)));
    }
  });
}

// The backward of one whole group of G contiguous features.
template <typename V, bool kCenter, typename S>
inline void backward_large_group(const S* dy, const S* x, int64_t G,
                                 typename V::Value mean, typename V::Value rstd, const typename V::Value* w,
                                 S* dx, typename V::Value* dw, typename V::Value* db,
                                 const NoDeduce<S>* next_x, const NoDeduce<S>* next_dy) {
  using T = typename V::Value;
  double sums[3];
  piecewise_sums<3>(G, [&](int64_t begin, int64_t end, double (&out)[3]) {
    backward_sums<V, kCenter>(dy, x, mean, w, begin, end, out);
  }, sums);
  write_backward<V, kCenter>(dy, x, 0, G, mean, rstd, w, backward_coefficients<T, kCenter>(sums, G, rstd), dx, dw, db,
                    next_x, next_dy);
}

// ------------------------------------------------------- groups of one ---
// g = 1: every value its own group, y = d * rstd * w + b with d = x - x (PLN:
// 0, or NaN where x is not finite, as the formula gives) or x (PLS), and
// rstd = 1 / sqrt(d^2 + eps): elementwise, so vectorised along the positions
// of one feature (n values a stride of 1 apart, one weight) or along the
// features of one position (weights per value).

template <typename V, bool kCenter, typename S>
inline void forward_ones(const S* x, S* y, int64_t n,
                         const typename V::Value* w, const typename V::Value* b, bool per_value_weights,
                         typename V::Value* mean, typename V::Value* rstd, double eps) {
  using T = typename V::Value;
  for_each_register<V>(n, [&](auto w_, int64_t j) {
    using W = decltype(w_);
    const auto v = W::load(x + j);
    const auto d = kCenter ? W::sub(v, v) : v;
    const auto r = W::div(W::set1(T(1)), W::sqrt(W::fmadd(d, d, W::set1(static_cast<T>(eps)))));
    const auto wv = per_value_weights ? W::load(w + j) : W::set1(*w);
    const auto bv = per_value_weights ? W::load(b + j) : W::set1(*b);
    W::store(y + j, W::fmadd(W::mul(d, r), wv, bv));
    if (mean) {
      W::store(mean + j, kCenter ? v : W::zero());
      W::store(rstd + j, r);
    }
  });
}

// ------------------------------------------------------ mid-size groups ---
// Groups of up to kMidRegisters registers (32-256 float features with
// AVX-512) carry too little work each to hide the latency of their
// reduce-sqrt-divide chain, so kMidBatch consecutive groups go through the
// passes together. Each lane then sums at most kMidRegisters values, in T,
// and the lanes are added in pairs (V::sum, for a batch's registers at once
// where V has lane_sums): the error of a cascade, without widening.

constexpr int kMidBatch = 8;
constexpr int64_t kMidRegisters = 16;
// Groups of up to kWideBatchRegisters registers go kLanes a batch where a
// register has more than 8 lanes (16 with AVX-512): the batch's lane totals
// then take one lane_sums. Larger groups stay at 8 a batch, which keeps a
// batch, the next one and what is fetched ahead within L1.
constexpr int64_t kWideBatchRegisters = 4;
constexpr int64_t kPipelinedBatchBytes = 4096;

// f(integral_constant<int, kB>) with the batch for groups of G.
template <typename V, typename F>
inline void with_mid_batch(int64_t G, F f) {
  if constexpr (V::kLanes > kMidBatch) {
    if (G <= kWideBatchRegisters * V::kLanes) return f(std::integral_constant<int, V::kLanes>());
  }
  f(std::integral_constant<int, kMidBatch>());
}

template <typename V>
bool mid_size_group(int64_t G) {
  return G <= kMidRegisters * V::kLanes;
}

// out[i] = the sum over the features of group i of its terms, for kB groups:
// term(W, i, j, acc) returns acc plus the terms of features j .. j + W::kLanes - 1.
template <typename V, int kB, typename Term>
inline void batch_sums(int64_t G, Term term, typename V::Value (&out)[kB]) {
  typename V::V acc[kB];
  for (int i = 0; i < kB; ++i) acc[i] = V::zero();
  int64_t j = 0;
  for (; j + V::kLanes <= G; j += V::kLanes)
    for (int i = 0; i < kB; ++i) acc[i] = term(V(), i, j, acc[i]);
  sums_of<V>(acc, kB, out);
  for (; j < G; ++j)
    for (int i = 0; i < kB; ++i) out[i] = term(ScalarVec<typename V::Value>(), i, j, out[i]);
}

// The statistics of kB consecutive groups of G features (group i at x + i * G):
// each group's shift s (PLN: its first value), the mean m of the shifted
// values and rstd. A group's are the same whatever kB.
// 64-byte aligned: GCC aligns such a local so for its vector copies (a
// batch's statistics are copied from one pipeline stage to the next), and
// under AddressSanitizer's fake stack (detect_stack_use_after_return) only
// the declared alignment is kept, where the aligned copy would fault.
template <typename T, int kB>
struct alignas(64) MidStats {
  T s[kB], m[kB], r[kB];
};

template <typename V, bool kCenter, int kB, typename S>
inline MidStats<typename V::Value, kB> mid_statistics(const S* x, int64_t G, double eps) {
  using T = typename V::Value;
  MidStats<T, kB> st;
  for (int i = 0; i < kB; ++i) st.s[i] = kCenter ? widen(x[i * G]) : T(0), st.m[i] = T(0);
  if (kCenter) {
    T sum[kB];
    batch_sums<V, kB>(G, [&](auto w_, int i, int64_t j, auto acc) {
      using W = decltype(w_);
      return W::add(acc, W::sub(W::load(x + i * G + j), W::set1(st.s[i])));
    }, sum);
    for (int i = 0; i < kB; ++i) st.m[i] = sum[i] / static_cast<T>(G);
  }
  T sumsq[kB];
  batch_sums<V, kB>(G, [&](auto w_, int i, int64_t j, auto acc) {
    using W = decltype(w_);
    const auto v = W::load(x + i * G + j);
    const auto d = kCenter ? W::sub(W::sub(v, W::set1(st.s[i])), W::set1(st.m[i])) : v;
    return W::fmadd(d, d, acc);
  }, sumsq);
  // A loop the compiler vectorises: one square root and one division for the batch.
  for (int i = 0; i < kB; ++i) st.r[i] = T(1) / std::sqrt(sumsq[i] / static_cast<T>(G) + static_cast<T>(eps));
  return st;
}

// The output of the kB groups from their statistics; group i's weights at
// w + offset[i]; its mean and rstd to mean[i] and rstd[i] unless mean is null.
// next: the features to fetch into the cache meanwhile (or null).
template <typename V, bool kCenter, int kB, typename S>
inline void mid_output(const MidStats<typename V::Value, kB>& st, const S* x, S* y, int64_t G,
                       const typename V::Value* w, const typename V::Value* b, const int64_t (&offset)[kB],
                       typename V::Value* mean, typename V::Value* rstd, const NoDeduce<S>* next, bool stream) {
  using T = typename V::Value;
  for (int i = 0; i < kB; ++i) {
    const int64_t o = i * G, c = offset[i];
    for_each_register<V>(G, [&](auto w_, int64_t j) {
      using W = decltype(w_);
      if (next) __builtin_prefetch(next + o + j);
      const auto v = W::load(x + o + j);
      const auto d = kCenter ? W::sub(W::sub(v, W::set1(st.s[i])), W::set1(st.m[i])) : v;
      const auto out = W::fmadd(W::mul(d, W::set1(st.r[i])), W::load(w + c + j), W::load(b + c + j));
      stream ? W::stream(y + o + j, out) : W::store(y + o + j, out);
    });
    if (mean) mean[i] = kCenter ? st.s[i] + st.m[i] : T(0), rstd[i] = st.r[i];
  }
}

// Where group u of a run of groups of a row of NG finds its weights (its
// index in the row times G), for the kB groups from u.
template <int kB>
inline void weight_offsets(int64_t u, int64_t NG, int64_t G, int64_t (&offset)[kB]) {
  int64_t k = u % NG;
  for (int i = 0; i < kB; ++i, k = k + 1 == NG ? 0 : k + 1) offset[i] = k * G;
}

// The forward of groups [begin, end) of G features each, group u at x + u * G
// with the weights of group u % NG of a row: kB (with_mid_batch) at a time, a batch
// running into the next row where the row ends, and the statistics of the
// next batch before the output of this one (their chains are independent,
// and each batch's output waits on its own); the last groups one at a time.
// A group's arithmetic is the same in a batch and alone: the bits do not
// depend on how the groups fall into tasks. Batches of more than
// kPipelinedBatchBytes take their statistics and output in turn (two batches
// and the one fetched ahead no longer stay in L1: groups of 256 floats ran
// their forward 1.3-1.7x slower in cache pipelined than in turn).
template <typename V, bool kCenter, int kB, typename S>
void forward_mid_batches(const S* x, S* y, int64_t G, int64_t NG, const typename V::Value* w,
                         const typename V::Value* b, typename V::Value* mean, typename V::Value* rstd, double eps,
                         int64_t begin, int64_t end, bool stream) {
  const bool pipelined = kB * G * int64_t(sizeof(S)) <= kPipelinedBatchBytes;
  int64_t u = begin;
  if (u + kB <= end) {
    auto st = mid_statistics<V, kCenter, kB>(x + u * G, G, eps);
    for (;;) {
      const bool more = u + 2 * kB <= end;
      decltype(st) next;
      if (more && pipelined) next = mid_statistics<V, kCenter, kB>(x + (u + kB) * G, G, eps);
      int64_t offset[kB];
      weight_offsets(u, NG, G, offset);
      // Fetched meanwhile: the first batch whose statistics are still to come.
      const int64_t ahead = u + (pipelined ? 2 : 1) * kB;
      mid_output<V, kCenter, kB>(st, x + u * G, y + u * G, G, w, b, offset, mean ? mean + u : nullptr,
                                 mean ? rstd + u : nullptr, ahead + kB <= end ? x + ahead * G : nullptr, stream);
      u += kB;
      if (!more) break;
      st = pipelined ? next : mid_statistics<V, kCenter, kB>(x + u * G, G, eps);
    }
  }
  for (; u < end; ++u) {
    int64_t offset[1];
    weight_offsets(u, NG, G, offset);
    mid_output<V, kCenter, 1>(mid_statistics<V, kCenter, 1>(x + u * G, G, eps), x + u * G, y + u * G, G, w, b, offset,
                              mean ? mean + u : nullptr, mean ? rstd + u : nullptr, nullptr, stream);
  }
}

template <typename V, bool kCenter, typename S>
void forward_mid_groups(const S* x, S* y, int64_t G, int64_t NG, const typename V::Value* w,
                        const typename V::Value* b, typename V::Value* mean, typename V::Value* rstd, double eps,
                        int64_t begin, int64_t end, bool stream) {
  with_mid_batch<V>(G, [&](auto batch) {
    forward_mid_batches<V, kCenter, decltype(batch)::value>(x, y, G, NG, w, b, mean, rstd, eps, begin, end, stream);
  });
}

// The backward of kB consecutive groups, group i's weights (and partial sums
// of dweight and dbias) at offset[i]; a group's arithmetic is the same
// whatever kB.
template <typename V, bool kCenter, int kB, typename S>
inline void backward_mid_groups(const S* dy, const S* x, int64_t G,
                                const typename V::Value* mean, const typename V::Value* rstd,
                                const typename V::Value* w_row, const int64_t (&offset)[kB], S* dx,
                                typename V::Value* dw_row, typename V::Value* db_row, const NoDeduce<S>* next_x,
                                const NoDeduce<S>* next_dy) {
  using T = typename V::Value;
  T sum_gy[kB], sum_d[kB], sum_gyd[kB];
  batch_sums<V, kB>(G, [&](auto w_, int i, int64_t j, auto acc) {
    using W = decltype(w_);
    return W::add(acc, W::mul(W::load(dy + i * G + j), W::load(w_row + offset[i] + j)));
  }, sum_gy);
  if (kCenter) {
    batch_sums<V, kB>(G, [&](auto w_, int i, int64_t j, auto acc) {
      using W = decltype(w_);
      return W::add(acc, W::sub(W::load(x + i * G + j), W::set1(mean[i])));
    }, sum_d);
  }
  batch_sums<V, kB>(G, [&](auto w_, int i, int64_t j, auto acc) {
    using W = decltype(w_);
    const auto d = W::sub(W::load(x + i * G + j), W::set1(mean[i]));
    return W::fmadd(W::mul(W::load(dy + i * G + j), W::load(w_row + offset[i] + j)), d, acc);
  }, sum_gyd);
  const T inv_g = T(1) / static_cast<T>(G);
  for (int i = 0; i < kB; ++i) {
    const T mean_gy = sum_gy[i] * inv_g, mean_d = kCenter ? sum_d[i] * inv_g : T(0);
    const T a = kCenter ? mean_gy : T(0);
    const T c = rstd[i] * (sum_gyd[i] * inv_g - mean_d * mean_gy);
    const int64_t o = i * G;
    const typename V::Value* w = w_row + offset[i];
    typename V::Value* dw = dw_row ? dw_row + offset[i] : nullptr;
    typename V::Value* db = db_row ? db_row + offset[i] : nullptr;
    for_each_register<V>(G, [&](auto w_, int64_t j) {
      using W = decltype(w_);
      if (next_x) __builtin_prefetch(next_x + o + j), __builtin_prefetch(next_dy + o + j);
      const auto dyv = W::load(dy + o + j);
      const auto yv = W::mul(W::sub(W::sub(W::load(x + o + j), W::set1(mean[i])), W::set1(mean_d)),
                             W::set1(rstd[i]));
      if (dx) {
        const auto gy_a = W::sub(W::mul(dyv, W::load(w + j)), W::set1(a));
        W::store(dx + o + j, W::mul(W::set1(rstd[i]), W::sub(gy_a, W::mul(yv, W::set1(c)))));
      }
      if (dw) {
        W::store(dw + j, W::fmadd(dyv, yv, W::load(dw + j)));
        W::store(db + j, W::add(dyv, W::load(db + j)));
      }
    });
  }
}

// ------------------------------------------------------- inner-strided ---
// NCHW and NCL with large groups: a group's G rows lie `stride` apart; the
// kernels run along n contiguous positions with the rows in blocks of
// kRowBlock, each block's float sums widened into per-position double sums
// (the blocked sums above, across rows instead of along them).

constexpr int64_t kRowBlock = 16;
constexpr int64_t kRowsInStep = 4;
// Positions per slab (a multiple of every register width): the slab's G rows
// of kSlabPositions values are read three times, so they should stay in L2.
constexpr int64_t kMaxSlabPositions = 512;
constexpr int64_t kSlabBytes = int64_t(256) << 10;
// The most lanes of any vocabulary type (float with AVX-512).
constexpr int kMaxLanes = 16;

template <typename T>
inline int64_t slab_positions(int64_t G) {
  const int64_t fit = kSlabBytes / (G * int64_t(sizeof(T)));
  return std::clamp<int64_t>(fit / 16 * 16, 16, kMaxSlabPositions);
}

// out[k][i] = sum over the group's rows j of the k-th term at position i,
// for positions [0, n), n <= kMaxSlabPositions: terms(W, j, i, acc) adds the
// K terms of row j at positions i .. i + W::kLanes - 1 into acc[0..K). Rows
// are read one after another (each a contiguous run), their terms added to
// per-position sums in T, which are widened into `out` every kRowBlock rows.
template <typename V, int K, typename Terms>
inline void strided_sums(int64_t n, int64_t G, Terms terms, double* const (&out)[K]) {
  using T = typename V::Value;
  alignas(64) T part[K][kMaxSlabPositions];
  for (int k = 0; k < K; ++k) std::fill(out[k], out[k] + n, 0.0);
  for (int64_t j0 = 0; j0 < G; j0 += kRowBlock) {
    const int64_t j1 = std::min(G, j0 + kRowBlock);
    // kRowsInStep rows a step, so that the partial sums are loaded and stored
    // once per step rather than once per row.
    for (int64_t j = j0; j < j1; j += kRowsInStep) {
      const int64_t rows = std::min<int64_t>(kRowsInStep, j1 - j);
      for_each_register<V>(n, [&](auto w_, int64_t i) {
        using W = decltype(w_);
        typename W::V acc[K];
        for (int k = 0; k < K; ++k) acc[k] = j == j0 ? W::zero() : W::load(part[k] + i);
        for (int64_t r = 0; r < rows; ++r) terms(w_, j + r, i, acc);
        for (int k = 0; k < K; ++k) W::store(part[k] + i, acc[k]);
      });
    }
    for (int k = 0; k < K; ++k) {
      for_each_register<V>(n, [&](auto w_, int64_t i) {
        using W = decltype(w_);
        W::accumulate(out[k] + i, W::load(part[k] + i));
      });
    }
  }
}

// The forward of n positions of one group (rows j at x + j * stride); mean and
// rstd get one value per position. scratch: 2 * n doubles. next: the slab the
// task takes next (same stride and rows; or null), fetched into the cache
// while this one's output is written: the slab's passes in L2 leave the memory
// idle otherwise, and a slab's rows are too short for the hardware prefetchers
// to run ahead.
template <typename V, bool kCenter, typename S>
inline void forward_large_slab(const S* x, S* y, int64_t stride, int64_t n,
                               int64_t G, const typename V::Value* w, const typename V::Value* b,
                               typename V::Value* mean, typename V::Value* rstd, double eps, double* scratch,
                               const NoDeduce<S>* next) {
  using T = typename V::Value;
  double* sum = scratch;
  double* sumsq = scratch + n;
  // m (the mean of the shifted values) is kept in `mean` until the output is written.
  if (kCenter) {
    strided_sums<V, 1>(n, G, [&](auto w_, int64_t j, int64_t i, auto* acc) {
      using W = decltype(w_);
      acc[0] = W::add(acc[0], W::sub(W::load(x + j * stride + i), W::load(x + i)));
    }, {sum});
    for (int64_t i = 0; i < n; ++i) mean[i] = static_cast<T>(sum[i] / static_cast<double>(G));
  }
  strided_sums<V, 1>(n, G, [&](auto w_, int64_t j, int64_t i, auto* acc) {
    using W = decltype(w_);
    const auto v = W::load(x + j * stride + i);
    const auto d = kCenter ? W::sub(W::sub(v, W::load(x + i)), W::load(mean + i)) : v;
    acc[0] = W::fmadd(d, d, acc[0]);
  }, {sumsq});
  for (int64_t i = 0; i < n; ++i) rstd[i] = static_cast<T>(1.0 / std::sqrt(sumsq[i] / static_cast<double>(G) + eps));
  for (int64_t j = 0; j < G; ++j) {
    const S* xj = x + j * stride;
    S* yj = y + j * stride;
    const S* next_j = next ? next + j * stride : nullptr;
    for_each_register<V>(n, [&](auto w_, int64_t i) {
      using W = decltype(w_);
      if (next_j) __builtin_prefetch(next_j + i);
      const auto v = W::load(xj + i);
      const auto d = kCenter ? W::sub(W::sub(v, W::load(x + i)), W::load(mean + i)) : v;
      W::store(yj + i, W::fmadd(W::mul(d, W::load(rstd + i)), W::set1(w[j]), W::set1(b[j])));
    });
  }
  for (int64_t i = 0; i < n; ++i) mean[i] = kCenter ? widen(x[i]) + mean[i] : T(0);
}

// The backward of n positions of one group; dw/db: the group's G double sums.
// scratch: 3 * n doubles and 3 * n values of T. next_x/next_dy: the task's
// next slab (or null), fetched while this one's dx is written (see
// forward_large_slab).
template <typename V, bool kCenter, typename S>
inline void backward_large_slab(const S* dy, const S* x, int64_t stride,
                                int64_t n, int64_t G, const typename V::Value* mean,
                                const typename V::Value* rstd, const typename V::Value* w,
                                S* dx, double* dw, double* db, double* scratch,
                                typename V::Value* coef, const NoDeduce<S>* next_x,
                                const NoDeduce<S>* next_dy) {
  using T = typename V::Value;
  double* s_gy = scratch;
  double* s_d = scratch + n;
  double* s_gyd = scratch + 2 * n;
  strided_sums<V, 3>(n, G, [&](auto w_, int64_t j, int64_t i, auto* acc) {
    using W = decltype(w_);
    const auto d = W::sub(W::load(x + j * stride + i), W::load(mean + i));
    const auto gy = W::mul(W::load(dy + j * stride + i), W::set1(w[j]));
    acc[0] = W::add(acc[0], gy);
    if (kCenter) acc[1] = W::add(acc[1], d);
    acc[2] = W::fmadd(gy, d, acc[2]);
  }, {s_gy, s_d, s_gyd});
  // Per position: a = mean_j(gy) (0 for PLS), bshift = mean_j(d), c = rstd * mean_j(gy * y).
  T* a = coef;
  T* bshift = coef + n;
  T* c = coef + 2 * n;
  const double inv_g = 1.0 / static_cast<double>(G);
  for (int64_t i = 0; i < n; ++i) {
    const double mean_gy = s_gy[i] * inv_g, mean_d = kCenter ? s_d[i] * inv_g : 0.0;
    a[i] = kCenter ? static_cast<T>(mean_gy) : T(0);
    bshift[i] = static_cast<T>(mean_d);
    c[i] = static_cast<T>(rstd[i] * (s_gyd[i] * inv_g - mean_d * mean_gy));
  }
  for (int64_t j = 0; j < G; ++j) {
    const S* xj = x + j * stride;
    const S* dyj = dy + j * stride;
    S* dxj = dx ? dx + j * stride : nullptr;
    const S* next_xj = next_x ? next_x + j * stride : nullptr;
    const S* next_dyj = next_dy ? next_dy + j * stride : nullptr;
    // Row j's terms of dweight and dbias, in registers along the row, widened
    // every kFlushSteps registers (each lane adds at most that many values).
    typename V::V sum_dyy = V::zero(), sum_dy = V::zero();
    typename V::Wide wide_dyy = V::wide_zero(), wide_dy = V::wide_zero();
    T tail_dyy = T(0), tail_dy = T(0);
    const auto position = [&](auto w_, int64_t i, auto& acc_dyy, auto& acc_dy) {
      using W = decltype(w_);
      if (next_xj) __builtin_prefetch(next_xj + i), __builtin_prefetch(next_dyj + i);
      const auto dyv = W::load(dyj + i);
      const auto r = W::load(rstd + i);
      const auto yv = W::mul(W::sub(W::sub(W::load(xj + i), W::load(mean + i)), W::load(bshift + i)), r);
      if (dxj) {
        const auto gy_a = W::sub(W::mul(dyv, W::set1(w[j])), W::load(a + i));
        W::store(dxj + i, W::mul(r, W::sub(gy_a, W::mul(yv, W::load(c + i)))));
      }
      acc_dyy = W::fmadd(dyv, yv, acc_dyy);
      acc_dy = W::add(acc_dy, dyv);
    };
    int64_t i = 0;
    for (int steps = 1; i + V::kLanes <= n; i += V::kLanes, ++steps) {
      position(V(), i, sum_dyy, sum_dy);
      if (steps % kFlushSteps == 0) {
        V::widen_add(wide_dyy, sum_dyy), V::widen_add(wide_dy, sum_dy);
        sum_dyy = V::zero(), sum_dy = V::zero();
      }
    }
    for (; i < n; ++i) position(ScalarVec<T>(), i, tail_dyy, tail_dy);
    if (dw) {
      V::widen_add(wide_dyy, sum_dyy);
      V::widen_add(wide_dy, sum_dy);
      dw[j] += V::wide_sum(wide_dyy) + static_cast<double>(tail_dyy);
      db[j] += V::wide_sum(wide_dy) + static_cast<double>(tail_dy);
    }
  }
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
