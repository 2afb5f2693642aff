#pragma once
// Small groups of the inner-strided layouts (NCHW, NCL): a group's g rows lie
// a plane of `stride` positions apart, and the kernels run along the
// contiguous position axis, kLanes positions a register, with all g rows in
// step, one chunk of positions at a time. One template a kernel over the
// vocabulary type W; the positions past the last whole register take the
// same template over ScalarVec. The formulas: see cpu/kernels.cpp.
//
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <algorithm>
#include <cstdint>

#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Positions processed together along the inner axis: the g row segments of one
// chunk (g * kChunk values) stay in L1/L2 between the passes, and each row is
// read as one long stream, which keeps power-of-two plane sizes (32x32 images)
// from mapping every row of a group onto the same cache set.
constexpr int64_t kChunk = 512;

// The forward reads a group's chunk twice: once for its statistics, from
// memory, and once for its output, from L2. With a group's rows a plane apart,
// the hardware prefetchers follow these short row runs poorly, so the output
// pass prefetches the task's next chunk into L2 (measurements:
// bench/results/cpu-kernel-notes.md).
struct NextChunk {
  int64_t offset = 0;  // from the current chunk, in elements
  int64_t n = 0;       // positions per row; 0: the task has no next chunk
};

inline NextChunk next_chunk(int64_t i0, int64_t I, int64_t G, bool more_slabs) {
  if (i0 + kChunk < I) return {kChunk, std::min(kChunk, I - i0 - kChunk)};
  if (more_slabs) return {G * I - i0, std::min(kChunk, I)};
  return {};
}

// A cache line's worth of positions of S: one prefetch each.
template <typename S>
inline bool starts_line(int64_t i) {
  return (i * int64_t(sizeof(S))) % 64 == 0;
}

// The forward of one chunk of n positions of one group; row j of the group
// starts at x + j * stride. Per position, the statistics in two passes (one,
// mean(d^2) - m^2, lost up to nine times ATen's error):
//   m = mean_j(x_j - x_0),  r = 1 / sqrt(mean_j(((x_j - x_0) - m)^2) + eps)
//   y_j = fmadd((x_j - x_0) - m, r * w_j, b_j),  saved mean = x_0 + m
// kStream: y rows are aligned to a register and the output is too large to
// stay in cache, so it is written around it (no read for ownership).
template <typename W, bool kCenter, bool kStream, typename S>
void forward_chunk(const S* x, S* y, int64_t stride, int64_t n, int64_t G, const typename W::Value* w,
                   const typename W::Value* b, typename W::Value* mean, typename W::Value* rstd,
                   typename W::Value eps, NextChunk next) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  const int64_t nv = n / kL * kL;
  if (nv > 0) {
    // s1: m, the mean of the values shifted by the group's first row; s2: the
    // sum of the squares of the centred values (x_j - x_0) - m.
    alignas(64) T s1[kChunk], s2[kChunk];
    for (int64_t i = 0; i < nv; i += kL) W::store(s1 + i, W::zero()), W::store(s2 + i, W::zero());
    const R inv_g = W::set1(T(1) / T(G));
    if (kCenter) {
      for (int64_t j = 1; j < G; ++j) {
        const S* xj = x + j * stride;
        for (int64_t i = 0; i < nv; i += kL) {
          W::store(s1 + i, W::add(W::load(s1 + i), W::sub(W::load(xj + i), W::load(x + i))));
        }
      }
      for (int64_t i = 0; i < nv; i += kL) W::store(s1 + i, W::mul(W::load(s1 + i), inv_g));
    }
    const auto centred = [&](const S* xj, int64_t i) {
      const R v = W::load(xj + i);
      return kCenter ? W::sub(W::sub(v, W::load(x + i)), W::load(s1 + i)) : v;
    };
    for (int64_t j = 0; j < G; ++j) {
      for (int64_t i = 0; i < nv; i += kL) {
        const R c = centred(x + j * stride, i);
        W::store(s2 + i, W::fmadd(c, c, W::load(s2 + i)));
      }
    }
    const R veps = W::set1(eps);
    for (int64_t i = 0; i < nv; i += kL) {
      const R var = W::mul(W::load(s2 + i), inv_g);
      W::store(rstd + i, W::div(W::set1(T(1)), W::sqrt(W::add(var, veps))));
      W::store(mean + i, kCenter ? W::add(W::load(s1 + i), W::load(x + i)) : W::zero());
    }
    for (int64_t j = 0; j < G; ++j) {
      const S* xj = x + j * stride;
      S* yj = y + j * stride;
      const R wj = W::set1(w[j]), bj = W::set1(b[j]);
      for (int64_t i = 0; i < nv; i += kL) {
        if (i < next.n && starts_line<S>(i)) __builtin_prefetch(xj + next.offset + i, 0, 2);
        const R out = W::fmadd(centred(xj, i), W::mul(W::load(rstd + i), wj), bj);
        kStream ? W::stream(yj + i, out) : W::store(yj + i, out);
      }
    }
  }
  if constexpr (kL > 1) {
    if (nv < n) {
      forward_chunk<ScalarVec<T>, kCenter, false>(x + nv, y + nv, stride, n - nv, G, w, b, mean + nv, rstd + nv, eps,
                                                  NextChunk{});
    }
  }
}

// Vectors of positions each lane of the dweight/dbias sums adds before they
// go to double: longer float sums lose digits (at 64 a lane, a chunk's
// worth, dweight at g = 3 was up to three times ATen's error).
constexpr int64_t kWidenSteps = 8;

// The backward of one chunk of n positions of one group (as forward_chunk);
// dw/db: the group's g double sums, added to. The first pass walks the
// group's rows four at a time, so that the per-position sums are loaded and
// stored once per four rows; the second prefetches the task's next chunk
// into L2 (as forward_chunk) and, with kStream, writes dx around the cache.
// Per position, with d = x - mean, a = mean_j(gy), b = mean_j(d) and
// c = mean_j(gy d) - a b, the second pass's constants are nbr = -b r (so
// that y = d r + nbr in one rounding), ra = -r a and rc = r c r:
//   dx = fmadd(r, gy, ra) - y rc
template <typename W, bool kCenter, bool kStream, typename S>
void backward_chunk(const S* dy, const S* x, int64_t stride, int64_t n, int64_t G, const typename W::Value* mean,
                    const typename W::Value* rstd, const typename W::Value* w, S* dx, double* dw, double* db,
                    NextChunk next) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  const int64_t nv = n / kL * kL;
  if (nv > 0) {
    alignas(64) T ra[kChunk], nbr[kChunk], rc[kChunk];
    for (int64_t j0 = 0; j0 < G; j0 += 4) {
      const int64_t rows = std::min<int64_t>(4, G - j0);
      for (int64_t i = 0; i < nv; i += kL) {
        const R m = W::load(mean + i);
        R a = j0 ? W::load(ra + i) : W::zero();
        R b = j0 ? W::load(nbr + i) : W::zero();
        R c = j0 ? W::load(rc + i) : W::zero();
        for (int64_t j = j0; j < j0 + rows; ++j) {
          const R d = W::sub(W::load(x + j * stride + i), m);
          const R gy = W::mul(W::load(dy + j * stride + i), W::set1(w[j]));
          a = W::add(a, gy);
          if (kCenter) b = W::add(b, d);
          c = W::fmadd(gy, d, c);
        }
        W::store(ra + i, a), W::store(nbr + i, b), W::store(rc + i, c);
      }
    }
    const R inv_g = W::set1(T(1) / T(G));
    for (int64_t i = 0; i < nv; i += kL) {
      const R r = W::load(rstd + i);
      const R mean_gy = W::mul(W::load(ra + i), inv_g);
      const R mean_d = kCenter ? W::mul(W::load(nbr + i), inv_g) : W::zero();
      const R c = W::fnmadd(mean_d, mean_gy, W::mul(W::load(rc + i), inv_g));
      W::store(ra + i, kCenter ? W::sub(W::zero(), W::mul(r, mean_gy)) : W::zero());
      W::store(nbr + i, W::sub(W::zero(), W::mul(mean_d, r)));
      W::store(rc + i, W::mul(W::mul(r, c), r));
    }
    for (int64_t j = 0; j < G; ++j) {
      const S* xj = x + j * stride;
      const S* dyj = dy + j * stride;
      S* dxj = dx ? dx + j * stride : nullptr;
      const R wj = W::set1(w[j]);
      R sum_dyy = W::zero(), sum_dy = W::zero();
      double wide_dyy[kL] = {}, wide_dy[kL] = {};
      for (int64_t i = 0; i < nv; i += kL) {
        if (i < next.n && starts_line<S>(i)) {
          __builtin_prefetch(xj + next.offset + i, 0, 2);
          __builtin_prefetch(dyj + next.offset + i, 0, 2);
        }
        const R r = W::load(rstd + i);
        const R yv = W::fmadd(W::sub(W::load(xj + i), W::load(mean + i)), r, W::load(nbr + i));
        const R dyv = W::load(dyj + i);
        if (dxj) {
          const R v = W::fnmadd(yv, W::load(rc + i), W::fmadd(r, W::mul(dyv, wj), W::load(ra + i)));
          kStream ? W::stream(dxj + i, v) : W::store(dxj + i, v);
        }
        sum_dyy = W::fmadd(dyv, yv, sum_dyy);
        sum_dy = W::add(sum_dy, dyv);
        if ((i / kL) % kWidenSteps == kWidenSteps - 1 || i + kL >= nv) {
          W::accumulate(wide_dyy, sum_dyy), W::accumulate(wide_dy, sum_dy);
          sum_dyy = W::zero(), sum_dy = W::zero();
        }
      }
      if (dw) {
        for (int l = 0; l < kL; ++l) dw[j] += wide_dyy[l], db[j] += wide_dy[l];
      }
    }
  }
  if constexpr (kL > 1) {
    if (nv < n) {
      backward_chunk<ScalarVec<T>, kCenter, false>(dy + nv, x + nv, stride, n - nv, G, mean + nv, rstd + nv, w,
                                                   dx ? dx + nv : nullptr, dw, db, NextChunk{});
    }
  }
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
