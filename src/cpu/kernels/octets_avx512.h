#pragma once
// Float groups of 8 with AVX-512: sixteen groups (128 floats) a block.
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cstdint>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

#if PLN_HAVE_AVX512
// Levels 2 and 3 of the reduction tree of sixteen float groups of 8 (register
// e holding groups 2e and 2e + 1), after level 1 has unpacked and added each
// pair of registers (2k, 2k + 1) into q[k]. Level 2: lane i of 128-bit lane L
// of P (Q) sums 128-bit lane L of register i (4 + i); level 3: 128-bit lanes
// [P0 + P1, Q0 + Q1, P2 + P3, Q2 + Q3], so lane p holds the sum of group
// 2 (p % 8) + (p >= 8) ("tree order").
inline __m512 octet_sums(const __m512 q[4]) {
  const auto level2 = [](__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
  };
  const __m512i first_halves =
      _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
  const __m512i second_halves =
      _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  const __m512 P = level2(q[0], q[1]), Q = level2(q[2], q[3]);
  return _mm512_add_ps(_mm512_permutex2var_ps(P, first_halves, Q),
                       _mm512_permutex2var_ps(P, second_halves, Q));
}

// Lanes 0-7 from lane lo of v, lanes 8-15 from lane hi.
inline __m512 spread_octets(__m512 v, int lo, int hi) {
  return _mm512_permutexvar_ps(
      _mm512_setr_epi32(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi), v);
}

// Float groups of 8 features with AVX-512: sixteen groups (128 floats) at a
// time, register e holding groups 2e and 2e + 1. The statistics come out of
// the reduction tree in "tree order", lane p holding group 2 (p % 8) + (p >= 8),
// so the group of lane p sits in lane p of register p % 8: the shifts (one
// value per group, against cancellation as in stats_groups_avx2) are a blend,
// and spread_octets(stat, e, e + 8) lays a statistic over register e's groups.
// A 512-bit shuffle does twice the work of a 256-bit one at the same cost
// here, so this beats the AVX2 path even before the pipelining below
// (measurements: bench/results/cpu-kernel-notes.md). A block is
// its statistics (octet_stats), then its output (octet_apply). Scalar twin:
// forward_groups<float, kCenter, 8>: the statistics in two passes (the mean,
// then the mean square about it, as stats_groups_avx2 and for its reason) and
// y = fmadd(xc * rstd, w, b).
struct OctetBlock {
  __m512 c[8];  // x less its group's mean (kCenter), or x
  __m512 rs;    // rstd, in tree order
};

// Lane p (tree order): the sum of the lanes of group 2 (p % 8) + (p >= 8) of
// f(v[0..7]), f applied lane by lane to the first level's unpacked pairs.
template <typename F>
inline __m512 octet_sum_of(const __m512 v[8], F f) {
  __m512 q[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    q[i] = f(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  return octet_sums(q);
}

template <bool kCenter, bool kSaveStats>
inline OctetBlock octet_stats_avx512(const float* x, float* mean, float* rstd, float eps) {
  OctetBlock blk;
  __m512* c = blk.c;
  __m512 shift = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const __m512 r = _mm512_loadu_ps(x + 16 * e);
    if (kCenter) {
      // [x[16e + e] x 8 | x[16e + 8 + e] x 8]: one value of each of the register's
      // groups (a shuffle here beat two broadcast loads; see the notes below)
      c[e] = _mm512_sub_ps(r, spread_octets(r, e, e + 8));
      const __mmask16 lanes_of_e = __mmask16((1u << e) | (1u << (e + 8)));
      shift = e == 0 ? r : _mm512_mask_blend_ps(lanes_of_e, shift, r);
    } else {
      c[e] = r;
    }
  }
  const __m512 eighth = _mm512_set1_ps(0.125f);
  __m512 m_shifted = _mm512_setzero_ps();
  if (kCenter) {
    m_shifted = _mm512_mul_ps(octet_sum_of(c, [](__m512 lo, __m512 hi) { return _mm512_add_ps(lo, hi); }),
                              eighth);
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) c[e] = _mm512_sub_ps(c[e], spread_octets(m_shifted, e, e + 8));
  }
  const __m512 var = _mm512_mul_ps(
      octet_sum_of(c, [](__m512 lo, __m512 hi) { return _mm512_fmadd_ps(lo, lo, _mm512_mul_ps(hi, hi)); }),
      eighth);
  const __m512 rs = _mm512_div_ps(_mm512_set1_ps(1.0f),
                                  _mm512_sqrt_ps(_mm512_add_ps(var, _mm512_set1_ps(eps))));
  if (kSaveStats) {
    const __m512i to_groups =
        _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    const __m512 m = kCenter ? _mm512_add_ps(m_shifted, shift) : _mm512_setzero_ps();
    _mm512_storeu_ps(mean, _mm512_permutexvar_ps(to_groups, m));
    _mm512_storeu_ps(rstd, _mm512_permutexvar_ps(to_groups, rs));
  }
  blk.rs = rs;
  return blk;
}

// y = xc * rstd * w + b, with rstd spread over each group's lanes.
template <bool kStream>
inline void octet_apply_avx512(const OctetBlock& blk, float* y, const float* w, const float* b) {
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const __m512 xn = _mm512_mul_ps(blk.c[e], spread_octets(blk.rs, e, e + 8));
    const __m512 out = _mm512_fmadd_ps(xn, _mm512_loadu_ps(w + 16 * e), _mm512_loadu_ps(b + 16 * e));
    if (kStream) {
      _mm512_stream_ps(y + 16 * e, out);
    } else {
      _mm512_storeu_ps(y + 16 * e, out);
    }
  }
}

// Blocks [0, n) of 128 floats (sixteen groups of 8) in a row, or in rows of
// `period` blocks each when they lie back to back (the weights restart with
// each row, the statistics do not). Software-pipelined: the statistics of
// block j + 1 come before the output of block j, whose operands wait on a
// long reduce-sqrt-divide chain; in program order the scheduler would fill
// with them and stall the next block's independent work. The pipeline runs
// through all the rows, not row by row, for the same reason. The same
// operations as one block at a time: the same bits. (Measurements of these
// kernels: bench/results/cpu-kernel-notes.md.)
template <bool kCenter, bool kSaveStats, bool kStream = false>
void forward_octet_blocks_avx512(const float* x, float* y, const float* w, const float* b,
                                 float* mean, float* rstd, int64_t n, int64_t period, float eps) {
  if (n <= 0) return;
  OctetBlock blk = octet_stats_avx512<kCenter, kSaveStats>(x, mean, rstd, eps);
  int64_t c = 0;  // block j's weights are block c's
  for (int64_t j = 0; j + 1 < n; ++j) {
    const int64_t i = j + 1;
    const OctetBlock next =
        octet_stats_avx512<kCenter, kSaveStats>(x + 128 * i, mean + 16 * i, rstd + 16 * i, eps);
    octet_apply_avx512<kStream>(blk, y + 128 * j, w + 128 * c, b + 128 * c);
    if (++c == period) c = 0;
    blk = next;
  }
  octet_apply_avx512<kStream>(blk, y + 128 * (n - 1), w + 128 * c, b + 128 * c);
}

// A group's value over its lanes from memory (two broadcast loads), where
// the shuffle unit, which bounds this kernel, is busy with the sums.
inline __m512 lanes_of_octets(const float* v, int e) {
  return _mm512_mask_broadcastss_ps(_mm512_set1_ps(v[2 * e]), 0xFF00, _mm_load_ss(v + 2 * e + 1));
}

// The backward of sixteen float groups of 8 features (128 floats), register
// e holding groups 2e and 2e + 1 as in octet_stats_avx512, whose reduction
// tree (and tree order) the three sums share: the sums (octet_grad_sums),
// then dx, dw and db from them (octet_grad_apply). The arithmetic is
// backward_groups_avx2<float, kCenter, 1>'s operation for operation (the same
// sums in the same order, the same fused operations, dy * w - a among them),
// so both give the same bits: a row mixes them. Twice the groups a shuffle:
// faster than the AVX2 path. Scalar twin: backward_groups<float, kCenter, 8>.
struct OctetGradBlock {
  __m512 d[8];          // x - mean
  __m512 mean_d, c, a;  // tree order
};

// kStream (see backward_octet_blocks_avx512): x and dy are fetched this many
// floats (8 KiB) ahead.
constexpr int64_t kOctetGradPrefetch = 2048;

template <bool kCenter, bool kStream>
inline OctetGradBlock octet_grad_sums_avx512(const float* dy, const float* x, const float* mean,
                                             const float* rstd, const float* w) {
  OctetGradBlock blk;
  __m512* d = blk.d;
  if (kStream) {
#pragma GCC unroll 8
    for (int line = 0; line < 8; ++line) {
      _mm_prefetch(reinterpret_cast<const char*>(x + kOctetGradPrefetch + 16 * line), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(dy + kOctetGradPrefetch + 16 * line), _MM_HINT_T0);
    }
  }
  const __m512 rstd16 = _mm512_loadu_ps(rstd);
  __m512 gy[8];
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    d[e] = _mm512_sub_ps(_mm512_loadu_ps(x + 16 * e), lanes_of_octets(mean, e));
    gy[e] = _mm512_mul_ps(_mm512_loadu_ps(dy + 16 * e), _mm512_loadu_ps(w + 16 * e));
  }
  // Level 1 of the sums of gy, d and gy * d (transpose_sum3's), then octet_sums.
  __m512 sg[4], sd[4], sgd[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512 glo = _mm512_unpacklo_ps(gy[2 * i], gy[2 * i + 1]);
    const __m512 ghi = _mm512_unpackhi_ps(gy[2 * i], gy[2 * i + 1]);
    const __m512 dlo = _mm512_unpacklo_ps(d[2 * i], d[2 * i + 1]);
    const __m512 dhi = _mm512_unpackhi_ps(d[2 * i], d[2 * i + 1]);
    sg[i] = _mm512_add_ps(glo, ghi);
    sd[i] = _mm512_add_ps(dlo, dhi);
    sgd[i] = _mm512_fmadd_ps(glo, dlo, _mm512_mul_ps(ghi, dhi));
  }
  // Tree order: lane p holds group 2 (p % 8) + (p >= 8).
  const __m512i to_tree = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m512 r = _mm512_permutexvar_ps(to_tree, rstd16);
  const __m512 eighth = _mm512_set1_ps(0.125f);
  const __m512 mean_gy = _mm512_mul_ps(octet_sums(sg), eighth);
  blk.mean_d = kCenter ? _mm512_mul_ps(octet_sums(sd), eighth) : _mm512_setzero_ps();
  blk.c = _mm512_mul_ps(r, _mm512_fnmadd_ps(blk.mean_d, mean_gy, _mm512_mul_ps(octet_sums(sgd), eighth)));
  blk.a = kCenter ? mean_gy : _mm512_setzero_ps();
  return blk;
}

template <bool kStream>
inline void octet_grad_apply_avx512(const OctetGradBlock& blk, const float* dy, const float* rstd,
                                    const float* w, float* dx, float* dw, float* db) {
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const __m512 r_e = lanes_of_octets(rstd, e), b_e = spread_octets(blk.mean_d, e, e + 8);
    const __m512 yv = _mm512_mul_ps(_mm512_sub_ps(blk.d[e], b_e), r_e);
    const __m512 dyv = _mm512_loadu_ps(dy + 16 * e);
    if (dx) {
      const __m512 gy_a = _mm512_fmsub_ps(dyv, _mm512_loadu_ps(w + 16 * e), spread_octets(blk.a, e, e + 8));
      const __m512 dxv = _mm512_mul_ps(r_e, _mm512_fnmadd_ps(yv, spread_octets(blk.c, e, e + 8), gy_a));
      if (kStream) {
        _mm512_stream_ps(dx + 16 * e, dxv);
      } else {
        _mm512_storeu_ps(dx + 16 * e, dxv);
      }
    }
    if (dw) {
      _mm512_storeu_ps(dw + 16 * e, _mm512_fmadd_ps(dyv, yv, _mm512_loadu_ps(dw + 16 * e)));
      _mm512_storeu_ps(db + 16 * e, _mm512_add_ps(dyv, _mm512_loadu_ps(db + 16 * e)));
    }
  }
}

// Blocks [0, n) of a row, pipelined as forward_octet_blocks_avx512 (the
// sums of block j + 1 before the outputs of block j; a smaller gain, the
// backward's chain being shorter). The two loops are written out: one
// helper taking the two steps as lambdas was slower in both (GCC 12).
//
// kStream (dx of kStreamBytes or more, rows 64-byte aligned; the caller
// fences): dx is written around the cache and x and dy are prefetched 8 KiB
// ahead. Where the kernel is bound by memory (Zen 5) that halves its time,
// and below kStreamBytes, where x, dy and dx stay in the L3, it loses to a
// reader of dx; where it is bound by its arithmetic (Zen 4) streaming only
// costs, so it streams only where streams_octet_backward() says
// (measurements: bench/results/cpu-kernel-notes.md).
template <bool kCenter, bool kStream>
void backward_octet_blocks_avx512(const float* dy, const float* x, const float* mean,
                                  const float* rstd, const float* w, float* dx, float* dw,
                                  float* db, int64_t n) {
  if (n <= 0) return;
  OctetGradBlock blk = octet_grad_sums_avx512<kCenter, kStream>(dy, x, mean, rstd, w);
  for (int64_t j = 0; j + 1 < n; ++j) {
    const int64_t i = j + 1;
    const OctetGradBlock next = octet_grad_sums_avx512<kCenter, kStream>(
        dy + 128 * i, x + 128 * i, mean + 16 * i, rstd + 16 * i, w + 128 * i);
    octet_grad_apply_avx512<kStream>(blk, dy + 128 * j, rstd + 16 * j, w + 128 * j,
                                     dx ? dx + 128 * j : nullptr, dw ? dw + 128 * j : nullptr,
                                     db ? db + 128 * j : nullptr);
    blk = next;
  }
  const int64_t j = n - 1;
  octet_grad_apply_avx512<kStream>(blk, dy + 128 * j, rstd + 16 * j, w + 128 * j,
                                   dx ? dx + 128 * j : nullptr, dw ? dw + 128 * j : nullptr,
                                   db ? db + 128 * j : nullptr);
}
#endif  // PLN_HAVE_AVX512

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
