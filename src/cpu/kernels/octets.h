#pragma once
// Float groups of 8 on AVX-512: sixteen groups (128 features) a block,
// register e holding groups 2e and 2e + 1. The statistics come out of a
// reduction tree (W::octet_tree) in "tree order", lane p holding group
// 2 (p % 8) + (p >= 8), so the group of lane p sits in lane p of register
// p % 8: the shifts (one value of each group, against cancellation as in
// features_last.h) are a blend, and W::octet_spread(stat, e) lays a
// statistic over register e's groups. A 512-bit shuffle does twice the work
// of a 256-bit one at the same cost here, so this beats the kernels across
// groups (measurements: bench/results/cpu-kernel-notes.md). A block is its
// statistics, then its output; the arithmetic is that of features_last.h:
// two passes, y = fmadd(xc * rstd, w, b), and a backward whose sums are
// backward_groups'(W, kV = 1) operation for operation, so both give the same
// bits and a row may mix them.
//
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cstdint>
#include <type_traits>

#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

template <typename W>
inline constexpr bool kHasOctets = W::kLanes == 16 && std::is_same_v<typename W::Value, float>;

template <typename W>
struct OctetBlock {
  typename W::V c[8];  // x less its group's mean (kCenter), or x
  typename W::V rs;    // rstd, in tree order
};

// Lane p (tree order): the sum over the lanes of group 2 (p % 8) + (p >= 8)
// of f(v[0..7]), f applied lane by lane to the first level's interleaved pairs.
template <typename W, typename F>
inline typename W::V octet_sum_of(const typename W::V* v, F f) {
  typename W::V q[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) q[i] = f(W::zip_lo(v[2 * i], v[2 * i + 1]), W::zip_hi(v[2 * i], v[2 * i + 1]));
  return W::octet_tree(q);
}

template <typename W, bool kCenter, bool kSaveStats, typename S>
inline OctetBlock<W> octet_stats(const S* x, float* mean, float* rstd, float eps) {
  using R = typename W::V;
  OctetBlock<W> blk;
  R* c = blk.c;
  R shift = W::zero();
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const R r = W::load(x + 16 * e);
    if (kCenter) {
      // Value e of each of the register's two groups.
      c[e] = W::sub(r, W::octet_spread(r, e));
      shift = e == 0 ? r : W::octet_blend(shift, r, e);
    } else {
      c[e] = r;
    }
  }
  const R eighth = W::set1(0.125f);
  R m_shifted = W::zero();
  if (kCenter) {
    m_shifted = W::mul(octet_sum_of<W>(c, [](R lo, R hi) { return W::add(lo, hi); }), eighth);
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) c[e] = W::sub(c[e], W::octet_spread(m_shifted, e));
  }
  const R var = W::mul(octet_sum_of<W>(c, [](R lo, R hi) { return W::fmadd(lo, lo, W::mul(hi, hi)); }), eighth);
  const R rs = W::div(W::set1(1.f), W::sqrt(W::add(var, W::set1(eps))));
  if (kSaveStats) {
    W::store(mean, W::octet_to_groups(kCenter ? W::add(m_shifted, shift) : W::zero()));
    W::store(rstd, W::octet_to_groups(rs));
  }
  blk.rs = rs;
  return blk;
}

// y = xc * rstd * w + b, with rstd spread over each group's lanes.
template <typename W, bool kStream, typename S>
inline void octet_apply(const OctetBlock<W>& blk, S* y, const float* w, const float* b) {
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const auto out = W::fmadd(W::mul(blk.c[e], W::octet_spread(blk.rs, e)), W::load(w + 16 * e), W::load(b + 16 * e));
    kStream ? W::stream(y + 16 * e, out) : W::store(y + 16 * e, out);
  }
}

// Blocks [0, n) of 128 features in a row, or in rows of `period` blocks each
// when they lie back to back (the weights restart with each row, the
// statistics do not). Software-pipelined: the statistics of block j + 1 come
// before the output of block j, whose operands wait on a long
// reduce-sqrt-divide chain; in program order the scheduler would fill with
// them and stall the next block's independent work. The pipeline runs
// through all the rows, not row by row, for the same reason. The same
// operations as one block at a time: the same bits.
template <typename W, bool kCenter, bool kSaveStats, bool kStream, typename S>
void forward_octet_blocks(const S* x, S* y, const float* w, const float* b, float* mean, float* rstd, int64_t n,
                          int64_t period, float eps) {
  if (n <= 0) return;
  OctetBlock<W> blk = octet_stats<W, kCenter, kSaveStats>(x, mean, rstd, eps);
  int64_t c = 0;  // block j's weights are block c's
  for (int64_t j = 0; j + 1 < n; ++j) {
    const int64_t i = j + 1;
    const OctetBlock<W> next = octet_stats<W, kCenter, kSaveStats>(x + 128 * i, mean + 16 * i, rstd + 16 * i, eps);
    octet_apply<W, kStream>(blk, y + 128 * j, w + 128 * c, b + 128 * c);
    if (++c == period) c = 0;
    blk = next;
  }
  octet_apply<W, kStream>(blk, y + 128 * (n - 1), w + 128 * c, b + 128 * c);
}

// The backward of sixteen groups of 8: the three sums share the reduction
// tree's first level (octet_grad_sums), then dx, dw and db from them
// (octet_grad_apply).
template <typename W>
struct OctetGradBlock {
  typename W::V d[8];          // x - mean
  typename W::V mean_d, c, a;  // tree order
};

// kStream (see backward_octet_blocks): x and dy are fetched this many
// features (8 KiB of float) ahead.
constexpr int64_t kOctetGradPrefetch = 2048;

template <typename W, bool kCenter, bool kStream, typename S>
inline OctetGradBlock<W> octet_grad_sums(const S* dy, const S* x, const float* mean, const float* rstd,
                                         const float* w) {
  using R = typename W::V;
  OctetGradBlock<W> blk;
  R* d = blk.d;
  if (kStream) {
    const char* ahead_x = reinterpret_cast<const char*>(x + kOctetGradPrefetch);
    const char* ahead_dy = reinterpret_cast<const char*>(dy + kOctetGradPrefetch);
    for (size_t line = 0; line < 128 * sizeof(S); line += 64) {
      __builtin_prefetch(ahead_x + line, 0, 3);
      __builtin_prefetch(ahead_dy + line, 0, 3);
    }
  }
  R gy[8];
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    d[e] = W::sub(W::load(x + 16 * e), W::octet_from_memory(mean, e));
    gy[e] = W::mul(W::load(dy + 16 * e), W::load(w + 16 * e));
  }
  R sg[4], sd[4], sgd[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const R glo = W::zip_lo(gy[2 * i], gy[2 * i + 1]), ghi = W::zip_hi(gy[2 * i], gy[2 * i + 1]);
    const R dlo = W::zip_lo(d[2 * i], d[2 * i + 1]), dhi = W::zip_hi(d[2 * i], d[2 * i + 1]);
    sg[i] = W::add(glo, ghi);
    sd[i] = W::add(dlo, dhi);
    sgd[i] = W::fmadd(glo, dlo, W::mul(ghi, dhi));
  }
  const R r = W::octet_to_tree(W::load(rstd));
  const R eighth = W::set1(0.125f);
  const R mean_gy = W::mul(W::octet_tree(sg), eighth);
  blk.mean_d = kCenter ? W::mul(W::octet_tree(sd), eighth) : W::zero();
  blk.c = W::mul(r, W::fnmadd(blk.mean_d, mean_gy, W::mul(W::octet_tree(sgd), eighth)));
  blk.a = kCenter ? mean_gy : W::zero();
  return blk;
}

template <typename W, bool kStream, typename S>
inline void octet_grad_apply(const OctetGradBlock<W>& blk, const S* dy, const float* rstd, const float* w, S* dx,
                             float* dw, float* db) {
  using R = typename W::V;
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const R r_e = W::octet_from_memory(rstd, e);
    const R yv = W::mul(W::sub(blk.d[e], W::octet_spread(blk.mean_d, e)), r_e);
    const R dyv = W::load(dy + 16 * e);
    if (dx) {
      const R gy_a = W::fmsub(dyv, W::load(w + 16 * e), W::octet_spread(blk.a, e));
      const R dxv = W::mul(r_e, W::fnmadd(yv, W::octet_spread(blk.c, e), gy_a));
      kStream ? W::stream(dx + 16 * e, dxv) : W::store(dx + 16 * e, dxv);
    }
    if (dw) {
      W::store(dw + 16 * e, W::fmadd(dyv, yv, W::load(dw + 16 * e)));
      W::store(db + 16 * e, W::add(dyv, W::load(db + 16 * e)));
    }
  }
}

// Blocks [0, n) of a row, pipelined as forward_octet_blocks (a smaller gain,
// the backward's chain being shorter). kStream (dx of kStreamBytes or more,
// rows aligned; the caller fences): dx is written around the cache and x and
// dy are prefetched 8 KiB ahead. Where the kernel is bound by memory (Zen 5)
// that halves its time, and below kStreamBytes, where x, dy and dx stay in
// the L3, it loses to a reader of dx; where it is bound by its arithmetic
// (Zen 4) streaming only costs, so it streams only where
// streams_octet_backward() says (measurements: bench/results/cpu-kernel-notes.md).
template <typename W, bool kCenter, bool kStream, typename S>
void backward_octet_blocks(const S* dy, const S* x, const float* mean, const float* rstd, const float* w, S* dx,
                           float* dw, float* db, int64_t n) {
  if (n <= 0) return;
  OctetGradBlock<W> blk = octet_grad_sums<W, kCenter, kStream>(dy, x, mean, rstd, w);
  for (int64_t j = 0; j + 1 < n; ++j) {
    const int64_t i = j + 1;
    const OctetGradBlock<W> next =
        octet_grad_sums<W, kCenter, kStream>(dy + 128 * i, x + 128 * i, mean + 16 * i, rstd + 16 * i, w + 128 * i);
    octet_grad_apply<W, kStream>(blk, dy + 128 * j, rstd + 16 * j, w + 128 * j, dx ? dx + 128 * j : nullptr,
                                 dw ? dw + 128 * j : nullptr, db ? db + 128 * j : nullptr);
    blk = next;
  }
  const int64_t j = n - 1;
  octet_grad_apply<W, kStream>(blk, dy + 128 * j, rstd + 16 * j, w + 128 * j, dx ? dx + 128 * j : nullptr,
                               dw ? dw + 128 * j : nullptr, db ? db + 128 * j : nullptr);
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
