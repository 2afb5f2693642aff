// Fused Parallel LN kernels. Compiled once per capability with PLN_CPU_NS set to
// its namespace (base: the compiler's default target; avx2: -mavx2 -mfma;
// avx512: avx2 plus AVX-512 F/DQ/VL/BW, see CMakeLists.txt). Float arithmetic
// is never reassociated: the centring below depends on its order.
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

#include "cpu/kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Positions processed together along the inner axis: the g row segments of one
// chunk (g * kChunk values) stay in L1/L2 between the passes, and each row is
// read as one long stream, which keeps power-of-two plane sizes (32x32 images)
// from mapping every row of a group onto the same cache set.
constexpr int64_t kChunk = 512;
// Outputs at least this large are written around the cache (see kStream) by
// the AVX2 forward (NCHW and features-last), the NCHW backward and, where
// streams_octet_backward() says, the AVX-512 features-last backward of groups
// of 8: a quarter of a 32 MiB L3,
// the rule glibc's memcpy follows. On a Zen 3 (AVX2) machine, one thread,
// 8 MiB of float, streamed: the features-last forward at [4096, 512] ran
// 1.02-1.33x faster and the forward followed by a read of y 0.89-1.17x
// (g = 8; g = 4: 1.00-1.24x and 1.07-1.13x); NCHW [32, 64, 32, 32]
// 1.46-1.70x (with the read 1.21-1.37x), its backward 1.43-1.50x. At 1-2 MiB
// the features-last forward and its reader were 0.72-0.89x, at 4 MiB
// 1.02-1.06x. The AVX2 features-last backward streamed was 0.84-0.91x there;
// on a Zen 5 machine, where it is bound by its arithmetic, streamed and
// prefetched as the AVX-512 one (backward_octet_blocks_avx512) it was
// 1.03-1.09x alone and 0.92-0.95x followed by a read of dx, so it does not
// stream. On an Intel Xeon (AVX-512), 8 MiB streamed: the AVX2 forward
// 0.96-1.17x, with the read 0.67-0.78x; from 12 MiB the forward 1.4-1.8x.
// The AVX-512 forward of float groups of 8 streamed was 0.96-0.97x at 8 MiB
// (0.71-0.73x with the read), so it streams only from kStreamOctetForwardBytes.
// A constant, not a share of the L3 the CPU reports: that machine reports
// 480 MiB but copies 16 MiB 3.3x slower than 8, and streams its 32 MiB NCHW
// 1.8x faster.
constexpr int64_t kStreamBytes = int64_t(8) << 20;
// The AVX-512 forward of float groups of 8 streams its output from twice a
// 32 MiB L3 on. On a Zen 4 machine ([rows, 512], the kernel alone, min of 30-40
// rounds, same bits), streamed against stored through the cache, ns a value
// and thread: 8-16 MiB at two threads 0.29-0.30 against 0.16-0.21 (with a read
// of y 0.50-0.56 against 0.27-0.31); 32 MiB at two threads 0.29-0.30 against
// 0.30-0.34 but with the read 0.59-0.64 against 0.48-0.58; 48 MiB 0.29 against
// 0.40, with the read even; from 64 MiB 0.21-0.31 against 0.27-0.43 at one and
// two threads, with the read 0.36-0.68 against 0.40-0.80.
constexpr int64_t kStreamOctetForwardBytes = int64_t(64) << 20;
// Whether an output of `count` values of T, in rows of `row` values starting
// at `out`, is written with non-temporal stores: at least `min_bytes`, and
// every row begins on an `align`-byte boundary (32 for the AVX2 stores, 64
// for AVX-512).
template <typename T>
bool streams_output(const T* out, int64_t row, int64_t count, int64_t align = 32,
                    int64_t min_bytes = kStreamBytes) {
  return out != nullptr && reinterpret_cast<uintptr_t>(out) % align == 0 &&
         row * int64_t(sizeof(T)) % align == 0 && count * int64_t(sizeof(T)) >= min_bytes;
}
// Work per parallel task, in elements.
constexpr int64_t kGrainElements = 1 << 15;

template <typename T>
inline T inv_sqrt(T v) {
  return T(1) / std::sqrt(v);
}

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

// The scalar forward of one chunk of n positions of one group (the inner-strided
// layouts: NCHW, NCL); row j of the group starts at x + j * stride. Per
// position, as above:
//   m = mean_j(x_j - s),  r = 1 / sqrt(mean_j(((x_j - s) - m)^2) + eps)
//   y_j = ((x_j - s) - m) * r * w_j + b_j,  saved mean = s + m
template <typename T, bool kCenter>
void forward_chunk(const T* x, T* y, int64_t stride, int64_t n, int64_t G, const T* w,
                   const T* b, T* mean, T* rstd, T eps) {
  T m[kChunk], r[kChunk];
  const T inv_g = T(1) / T(G);
  for (int64_t i = 0; i < n; ++i) m[i] = T(0), r[i] = T(0);
  if (kCenter) {
    for (int64_t j = 1; j < G; ++j) {
      const T* xj = x + j * stride;
      for (int64_t i = 0; i < n; ++i) m[i] += xj[i] - x[i];
    }
    for (int64_t i = 0; i < n; ++i) m[i] *= inv_g;
  }
  const auto centred = [&](const T* xj, int64_t i) { return kCenter ? (xj[i] - x[i]) - m[i] : xj[i]; };
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    for (int64_t i = 0; i < n; ++i) {
      const T d = centred(xj, i);
      r[i] += d * d;
    }
  }
  for (int64_t i = 0; i < n; ++i) r[i] = inv_sqrt(r[i] * inv_g + eps);
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    T* yj = y + j * stride;
    const T wj = w[j], bj = b[j];
    for (int64_t i = 0; i < n; ++i) yj[i] = centred(xj, i) * (r[i] * wj) + bj;
  }
  for (int64_t i = 0; i < n; ++i) mean[i] = kCenter ? x[i] + m[i] : T(0), rstd[i] = r[i];
}

#if PLN_HAVE_AVX2
// The forward reads a group's chunk twice: once for its statistics, from
// memory, and once for its output, from L2. With a group's rows a plane apart,
// the hardware prefetchers follow these short row runs poorly, so the output
// pass prefetches the task's next chunk into L2: ~1.25x on the 32 MiB NCHW
// benchmark shape at one thread. The backward and the portable forward
// measured no gain from it.
struct NextChunk {
  int64_t offset = 0;  // from the current chunk, in elements
  int64_t n = 0;       // positions per row; 0: the task has no next chunk
};

inline NextChunk next_chunk(int64_t i0, int64_t I, int64_t G, bool more_slabs) {
  if (i0 + kChunk < I) return {kChunk, std::min(kChunk, I - i0 - kChunk)};
  if (more_slabs) return {G * I - i0, std::min(kChunk, I)};
  return {};
}

// Scalar twin: forward_chunk (which also takes the positions past the last
// multiple of 8). Eight float positions at a time, the statistics in one pass
// (mean(d^2) - m^2, see the forward's formula above).
// kStream: y rows are 32-byte aligned and the output is too large to stay in
// cache, so it is written with non-temporal stores (no read-for-ownership).
template <bool kCenter, bool kStream>
void forward_chunk_avx2(const float* x, float* y, int64_t stride, int64_t n, int64_t G,
                        const float* w, const float* b, float* mean, float* rstd, float eps,
                        NextChunk next) {
  const int64_t nv = n / 8 * 8;
  if (nv > 0) {
    // Centered statistics from values shifted by the group's first row, in
    // one pass: the shift also removes the cancellation of E[x^2] - E[x]^2.
    // s1 ends as m, the mean of the shifted values (see forward_chunk).
    alignas(32) float s1[kChunk], s2[kChunk];
    for (int64_t i = 0; i < nv; i += 8) {
      _mm256_store_ps(s1 + i, _mm256_setzero_ps());
      if (kCenter) {
        _mm256_store_ps(s2 + i, _mm256_setzero_ps());
      } else {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_store_ps(s2 + i, _mm256_mul_ps(v, v));
      }
    }
    for (int64_t j = 1; j < G; ++j) {
      const float* xj = x + j * stride;
      for (int64_t i = 0; i < nv; i += 8) {
        if (kCenter) {
          const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xj + i), _mm256_loadu_ps(x + i));
          _mm256_store_ps(s1 + i, _mm256_add_ps(_mm256_load_ps(s1 + i), d));
          _mm256_store_ps(s2 + i, _mm256_fmadd_ps(d, d, _mm256_load_ps(s2 + i)));
        } else {
          const __m256 v = _mm256_loadu_ps(xj + i);
          _mm256_store_ps(s2 + i, _mm256_fmadd_ps(v, v, _mm256_load_ps(s2 + i)));
        }
      }
    }
    const __m256 inv_g = _mm256_set1_ps(1.f / float(G));
    const __m256 veps = _mm256_set1_ps(eps), one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nv; i += 8) {
      __m256 mu = zero, var;
      if (kCenter) {
        const __m256 m = _mm256_mul_ps(_mm256_load_ps(s1 + i), inv_g);
        var = _mm256_fnmadd_ps(m, m, _mm256_mul_ps(_mm256_load_ps(s2 + i), inv_g));
        var = _mm256_max_ps(var, zero);
        mu = _mm256_add_ps(m, _mm256_loadu_ps(x + i));
        _mm256_store_ps(s1 + i, m);
      } else {
        var = _mm256_mul_ps(_mm256_load_ps(s2 + i), inv_g);
      }
      const __m256 r = _mm256_div_ps(one, _mm256_sqrt_ps(_mm256_add_ps(var, veps)));
      _mm256_storeu_ps(mean + i, mu);
      _mm256_storeu_ps(rstd + i, r);
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xj = x + j * stride;
      float* yj = y + j * stride;
      const __m256 wj = _mm256_set1_ps(w[j]), bj = _mm256_set1_ps(b[j]);
      for (int64_t i = 0; i < nv; i += 8) {
        if (i % 16 == 0 && i < next.n) _mm_prefetch(xj + next.offset + i, _MM_HINT_T1);
        const __m256 xj_i = _mm256_loadu_ps(xj + i);
        const __m256 xc =
            kCenter ? _mm256_sub_ps(_mm256_sub_ps(xj_i, _mm256_loadu_ps(x + i)), _mm256_load_ps(s1 + i))
                    : xj_i;
        const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(rstd + i), wj);
        if (kStream) {
          _mm256_stream_ps(yj + i, _mm256_fmadd_ps(xc, scale, bj));
        } else {
          _mm256_storeu_ps(yj + i, _mm256_fmadd_ps(xc, scale, bj));
        }
      }
    }
  }
  if (nv < n) {
    forward_chunk<float, kCenter>(x + nv, y + nv, stride, n - nv, G, w, b, mean + nv, rstd + nv,
                                  eps);
  }
}

// One AVX2 register of T and the operations the features-last kernels use:
// kLanes groups are handled at once, lane l of a statistic belonging to group l.
// (No scalar twin: a vocabulary for stats_groups_avx2 and backward_groups_avx2.)
template <typename T>
struct Lanes;

template <>
struct Lanes<float> {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V set1(float s) { return _mm256_set1_ps(s); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V rsqrt(V v) { return _mm256_div_ps(set1(1.f), _mm256_sqrt_ps(v)); }
  static V unpacklo(V a, V b) { return _mm256_unpacklo_ps(a, b); }
  static V unpackhi(V a, V b) { return _mm256_unpackhi_ps(a, b); }
  // From [a0+a2, b0+b2, a1+a3, b1+b3 | lanes 4-7 alike] for four pairs (a, b).
  static V finish_transpose_sum(const V* q) {
    const V lo = add(_mm256_shuffle_ps(q[0], q[1], 0x44), _mm256_shuffle_ps(q[0], q[1], 0xEE));
    const V hi = add(_mm256_shuffle_ps(q[2], q[3], 0x44), _mm256_shuffle_ps(q[2], q[3], 0xEE));
    return add(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
  }
};

template <>
struct Lanes<double> {
  using V = __m256d;
  static constexpr int kLanes = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static void stream(double* p, V v) { _mm256_stream_pd(p, v); }  // p 32-byte aligned
  static V bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V set1(double s) { return _mm256_set1_pd(s); }
  static V zero() { return _mm256_setzero_pd(); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_pd(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_pd(a, b, c); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V rsqrt(V v) { return _mm256_div_pd(set1(1.0), _mm256_sqrt_pd(v)); }
  static V unpacklo(V a, V b) { return _mm256_unpacklo_pd(a, b); }
  static V unpackhi(V a, V b) { return _mm256_unpackhi_pd(a, b); }
  // From [a0+a1, b0+b1 | a2+a3, b2+b3] and the same of (c, d).
  static V finish_transpose_sum(const V* q) {
    return add(_mm256_permute2f128_pd(q[0], q[1], 0x20), _mm256_permute2f128_pd(q[0], q[1], 0x31));
  }
};

// Lane l: the sum of the lanes of v[l], summed while transposed with
// single-uop unpacks and shuffles (hadd is several uops on common cores).
// Scalar twin: the sums over one group's features in forward_groups and
// backward_groups (added in a tree order, not left to right).
template <typename L>
inline typename L::V transpose_sum(const typename L::V* v) {
  typename L::V q[L::kLanes / 2];
  for (int i = 0; i < L::kLanes / 2; ++i) {
    q[i] = L::add(L::unpacklo(v[2 * i], v[2 * i + 1]), L::unpackhi(v[2 * i], v[2 * i + 1]));
  }
  return L::finish_transpose_sum(q);
}

// Lane l: the sum and the sum of squares of the lanes of d[l] (scalar twin:
// forward_groups' sums). The first transpose step is shared: squaring commutes
// with the shuffles.
template <typename L>
inline void transpose_sum2(const typename L::V* d, typename L::V& sum, typename L::V& sumsq) {
  typename L::V q1[L::kLanes / 2], q2[L::kLanes / 2];
  for (int i = 0; i < L::kLanes / 2; ++i) {
    const typename L::V lo = L::unpacklo(d[2 * i], d[2 * i + 1]);
    const typename L::V hi = L::unpackhi(d[2 * i], d[2 * i + 1]);
    q1[i] = L::add(lo, hi);
    q2[i] = L::fmadd(lo, lo, L::mul(hi, hi));
  }
  sum = L::finish_transpose_sum(q1);
  sumsq = L::finish_transpose_sum(q2);
}

// Lane l: the sums of the lanes of g[l], of d[l] and of g[l] * d[l] (scalar
// twin: backward_groups' sums a, b, c); the first transpose step of the
// products is shared as in transpose_sum2.
template <typename L>
inline void transpose_sum3(const typename L::V* g, const typename L::V* d, typename L::V& sum_g,
                           typename L::V& sum_d, typename L::V& sum_gd) {
  typename L::V q1[L::kLanes / 2], q2[L::kLanes / 2], q3[L::kLanes / 2];
  for (int i = 0; i < L::kLanes / 2; ++i) {
    const typename L::V glo = L::unpacklo(g[2 * i], g[2 * i + 1]), ghi = L::unpackhi(g[2 * i], g[2 * i + 1]);
    const typename L::V dlo = L::unpacklo(d[2 * i], d[2 * i + 1]), dhi = L::unpackhi(d[2 * i], d[2 * i + 1]);
    q1[i] = L::add(glo, ghi);
    q2[i] = L::add(dlo, dhi);
    q3[i] = L::fmadd(glo, dlo, L::mul(ghi, dhi));
  }
  sum_g = L::finish_transpose_sum(q1);
  sum_d = L::finish_transpose_sum(q2);
  sum_gd = L::finish_transpose_sum(q3);
}

// Float groups of 4 features are half a register, so eight of them (32
// floats) are transposed into four registers holding feature j of every
// group (lane l holds group 0, 2, 4, 6, 1, 3, 5, 7 for l = 0..7); per-group
// sums are then vertical adds. (No scalar twin: the layout of stats_quads_avx2,
// apply_quads_avx2 and backward_quads_avx2.)
struct Quads {
  // Permutations from lane order to group order and back.
  static __m256i to_groups() { return _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); }
  static __m256i to_lanes() { return _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7); }
  static void load(const float* p, __m256 e[4]) {
    const __m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + 8), r2 = _mm256_loadu_ps(p + 16),
                 r3 = _mm256_loadu_ps(p + 24);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    e[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    e[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    e[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    e[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
  }
  static void transpose_back(const __m256 e[4], __m256 r[4]) {
    const __m256 t0 = _mm256_shuffle_ps(e[0], e[1], 0x44), t2 = _mm256_shuffle_ps(e[0], e[1], 0xEE);
    const __m256 t1 = _mm256_shuffle_ps(e[2], e[3], 0x44), t3 = _mm256_shuffle_ps(e[2], e[3], 0xEE);
    r[0] = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(2, 0, 2, 0));
    r[1] = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 1, 3, 1));
    r[2] = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(2, 0, 2, 0));
    r[3] = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static void store(const __m256 e[4], float* p) {
    __m256 r[4];
    transpose_back(e, r);
    for (int i = 0; i < 4; ++i) _mm256_storeu_ps(p + 8 * i, r[i]);
  }
  static void add_to(const __m256 e[4], float* p) {
    __m256 r[4];
    transpose_back(e, r);
    for (int i = 0; i < 4; ++i) _mm256_storeu_ps(p + 8 * i, _mm256_add_ps(_mm256_loadu_ps(p + 8 * i), r[i]));
  }
};

// Mean and 1/std of eight consecutive groups of 4 float features; `shifted`
// gets each group's mean less its first value (the shift, e[0]). Scalar twin:
// the statistics of forward_groups<float, kCenter, 4>, two passes as there
// (mean_j(xc_j^2) from the centred values, not mean(d^2) - m^2).
template <bool kCenter>
inline void stats_quads_avx2(const float* x, float* mean, float* shifted, float* rstd, float eps) {
  __m256 e[4];
  Quads::load(x, e);
  const __m256 quarter = _mm256_set1_ps(0.25f);
  __m256 m = _mm256_setzero_ps();
  if (kCenter) {
    for (int i = 1; i < 4; ++i) e[i] = _mm256_sub_ps(e[i], e[0]);
    m = _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(e[1], e[2]), e[3]), quarter);
  }
  __m256 v = kCenter ? _mm256_mul_ps(m, m) : _mm256_mul_ps(e[0], e[0]);
  for (int i = 1; i < 4; ++i) {
    const __m256 d = _mm256_sub_ps(e[i], m);
    v = _mm256_fmadd_ps(d, d, v);
  }
  const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                 _mm256_sqrt_ps(_mm256_fmadd_ps(v, quarter, _mm256_set1_ps(eps))));
  if (kCenter) {
    _mm256_storeu_ps(mean, _mm256_permutevar8x32_ps(_mm256_add_ps(e[0], m), Quads::to_groups()));
    _mm256_storeu_ps(shifted, _mm256_permutevar8x32_ps(m, Quads::to_groups()));
  } else {
    _mm256_storeu_ps(mean, m);
  }
  _mm256_storeu_ps(rstd, _mm256_permutevar8x32_ps(r, Quads::to_groups()));
}

// The output of eight consecutive groups of 4 float features from their
// statistics: register i holds groups 2i and 2i + 1. kStream: as in
// apply_groups_avx2. Scalar twin: the output loop of
// forward_groups<float, kCenter, 4>, as y_j = fmadd(xc_j * rstd, w_j, b_j).
template <bool kCenter, bool kStream>
inline void apply_quads_avx2(const float* x, float* y, const float* w, const float* b,
                             const float* shifted, const float* rstd) {
  const __m256 m8 = kCenter ? _mm256_loadu_ps(shifted) : _mm256_setzero_ps(), r8 = _mm256_loadu_ps(rstd);
  for (int i = 0; i < 4; ++i) {
    const int lo = 2 * i, hi = 2 * i + 1;
    const __m256i pick = _mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi);
    const __m256 m = _mm256_permutevar8x32_ps(m8, pick), r = _mm256_permutevar8x32_ps(r8, pick);
    __m256 xv = _mm256_loadu_ps(x + 8 * i);
    if (kCenter) xv = _mm256_sub_ps(_mm256_sub_ps(xv, _mm256_permute_ps(xv, 0x00)), m);
    const __m256 xn = _mm256_mul_ps(xv, r);
    const __m256 out = _mm256_fmadd_ps(xn, _mm256_loadu_ps(w + 8 * i), _mm256_loadu_ps(b + 8 * i));
    if (kStream) {
      _mm256_stream_ps(y + 8 * i, out);
    } else {
      _mm256_storeu_ps(y + 8 * i, out);
    }
  }
}

// The backward of eight consecutive groups of 4 float features, in the
// transposed layout of Quads. Scalar twin: backward_groups<float, kCenter, 4>
// (dweight/dbias added to this task's float partials as there).
template <bool kCenter>
inline void backward_quads_avx2(const float* dy, const float* x, const float* mean, const float* rstd,
                                const float* w, float* dx, float* dw, float* db) {
  __m256 xe[4], dye[4], we[4];
  Quads::load(x, xe);
  Quads::load(dy, dye);
  Quads::load(w, we);
  const __m256 m = _mm256_permutevar8x32_ps(_mm256_loadu_ps(mean), Quads::to_lanes());
  const __m256 r = _mm256_permutevar8x32_ps(_mm256_loadu_ps(rstd), Quads::to_lanes());
  __m256 yv[4], gy[4];
  for (int i = 0; i < 4; ++i) yv[i] = _mm256_sub_ps(xe[i], m);
  if (kCenter) {  // re-centred (see backward_chunk)
    const __m256 b = _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(yv[0], yv[1]), _mm256_add_ps(yv[2], yv[3])),
                                   _mm256_set1_ps(0.25f));
    for (int i = 0; i < 4; ++i) yv[i] = _mm256_sub_ps(yv[i], b);
  }
  __m256 a = _mm256_setzero_ps(), c = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    yv[i] = _mm256_mul_ps(yv[i], r);
    gy[i] = _mm256_mul_ps(dye[i], we[i]);
    a = _mm256_add_ps(a, gy[i]);
    c = _mm256_fmadd_ps(gy[i], yv[i], c);
  }
  if (dw) {
    __m256 pw[4];
    for (int i = 0; i < 4; ++i) pw[i] = _mm256_mul_ps(dye[i], yv[i]);
    Quads::add_to(pw, dw);
    Quads::add_to(dye, db);
  }
  if (!dx) return;
  const __m256 quarter = _mm256_set1_ps(0.25f);
  a = kCenter ? _mm256_mul_ps(a, quarter) : _mm256_setzero_ps();
  c = _mm256_mul_ps(c, quarter);
  for (int i = 0; i < 4; ++i) gy[i] = _mm256_mul_ps(r, _mm256_fnmadd_ps(yv[i], c, _mm256_sub_ps(gy[i], a)));
  Quads::store(gy, dx);
}

// Mean and 1/std of kLanes consecutive groups of G = kLanes * V contiguous
// features (kV = 0: V at run time), in one pass over values shifted by their
// group's first value: the shift also removes the cancellation of E[x^2] -
// E[x]^2. `shifted` gets the mean of the shifted values, which the output
// pass subtracts after the shift; the true mean is completed there.
// Transposing sums cost shuffles, the scarce resource here, so a group of
// one register (V = 1) shares them between both sums. Scalar twin: the
// statistics of forward_groups, in one pass (mean(d^2) - m^2).
template <typename T, bool kCenter, int kV>
inline void stats_groups_avx2(const T* x, T* shifted, T* rstd, int64_t V_rt, T eps) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  const Vec inv_g = L::set1(T(1) / T(G));
  Vec first[kL], sum, sumsq;
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) first[l] = L::load(x + l * G);
  if (kV == 1) {
    Vec d[kL];
#pragma GCC unroll 8
    for (int l = 0; l < kL; ++l) {
      d[l] = kCenter ? L::sub(first[l], L::bcast(x + l * G)) : first[l];
    }
    transpose_sum2<L>(d, sum, sumsq);
  } else {
    Vec s1[kL], s2[kL];
#pragma GCC unroll 8
    for (int l = 0; l < kL; ++l) {
      const Vec shift_l = kCenter ? L::bcast(x + l * G) : L::zero();
      Vec a = L::zero(), q = L::zero();
      for (int64_t v = 0; v < V; ++v) {
        const Vec d = L::sub(v == 0 ? first[l] : L::load(x + l * G + kL * v), shift_l);
        a = L::add(a, d);
        q = L::fmadd(d, d, q);
      }
      s1[l] = a;
      s2[l] = q;
    }
    sum = transpose_sum<L>(s1);
    sumsq = transpose_sum<L>(s2);
  }
  const Vec m_shifted = L::mul(sum, inv_g);
  Vec var = L::mul(sumsq, inv_g);
  if (kCenter) var = L::max(L::fnmadd(m_shifted, m_shifted, var), L::zero());
  L::store(shifted, kCenter ? m_shifted : L::zero());
  L::store(rstd, L::rsqrt(L::add(var, L::set1(eps))));
}

// The output of groups [0, NG) of G = kLanes * V contiguous features (kV = 0:
// V at run time) from their statistics, and their means unless `mean` is null
// (no backward will read them). kStream: y is 32-byte aligned and the output
// too large to stay in cache, so it is written with non-temporal stores.
// Scalar twin: the output loop of forward_groups, as y_j = fmadd(xc_j * rstd, w_j, b_j).
template <typename T, bool kCenter, int kV, bool kStream>
inline void apply_groups_avx2(const T* x, T* y, const T* w, const T* b, const T* shifted,
                              const T* rstd, T* mean, int64_t NG, int64_t V_rt) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  for (int64_t k = 0; k < NG; ++k) {
    const Vec s = L::bcast(x + k * G), m = L::bcast(shifted + k), r = L::bcast(rstd + k);
    if (mean) mean[k] = kCenter ? x[k * G] + shifted[k] : T(0);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t c = k * G + kL * v;
      const Vec xc = kCenter ? L::sub(L::sub(L::load(x + c), s), m) : L::load(x + c);
      const Vec xn = L::mul(xc, r);
      const Vec out = L::fmadd(xn, L::load(w + c), L::load(b + c));
      if (kStream) {
        L::stream(y + c, out);
      } else {
        L::store(y + c, out);
      }
    }
  }
}
#endif  // PLN_HAVE_AVX2

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
// value per group, against cancellation as in stats_groups_avx2) are a blend.
// A 512-bit shuffle does twice the work of a 256-bit one at the same cost
// here: ~1.3x over the AVX2 path before the pipelining below. A block is
// its statistics (octet_stats), then its output (octet_apply). Scalar twin:
// forward_groups<float, kCenter, 8>, with the statistics in one pass
// (mean(d^2) - m^2) and y = fmadd(fmadd(d, rstd, -m_shifted * rstd), w, b).
struct OctetBlock {
  __m512 d[8];        // x - shift
  __m512 rs, neg_mr;  // rstd and -m_shifted * rstd, in tree order
};

template <bool kCenter, bool kSaveStats>
inline OctetBlock octet_stats_avx512(const float* x, float* mean, float* rstd, float eps) {
  OctetBlock blk;
  __m512 r[8];
  __m512* d = blk.d;
  __m512 shift = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    r[e] = _mm512_loadu_ps(x + 16 * e);
    if (kCenter) {
      // [x[16e + e] x 8 | x[16e + 8 + e] x 8]: one value of each of the register's
      // groups (a shuffle here measured 1.04x faster than two broadcast loads)
      const __m512 s = spread_octets(r[e], e, e + 8);
      d[e] = _mm512_sub_ps(r[e], s);
      const __mmask16 lanes_of_e = __mmask16((1u << e) | (1u << (e + 8)));
      shift = e == 0 ? r[0] : _mm512_mask_blend_ps(lanes_of_e, shift, r[e]);
    } else {
      d[e] = r[e];
    }
  }
  // Level 1 (shared by both sums: squaring commutes with the unpacks), then octet_sums.
  __m512 s1[4], q1[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512 lo = _mm512_unpacklo_ps(d[2 * i], d[2 * i + 1]);
    const __m512 hi = _mm512_unpackhi_ps(d[2 * i], d[2 * i + 1]);
    s1[i] = _mm512_add_ps(lo, hi);
    q1[i] = _mm512_fmadd_ps(lo, lo, _mm512_mul_ps(hi, hi));
  }
  const __m512 eighth = _mm512_set1_ps(0.125f);
  const __m512 m_shifted = _mm512_mul_ps(octet_sums(s1), eighth);
  __m512 var = _mm512_mul_ps(octet_sums(q1), eighth);
  if (kCenter) {
    var = _mm512_max_ps(_mm512_fnmadd_ps(m_shifted, m_shifted, var), _mm512_setzero_ps());
  }
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
  blk.neg_mr = kCenter ? _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), m_shifted), rs)
                       : _mm512_setzero_ps();
  return blk;
}

// y = ((x - shift) * rstd - m_shifted * rstd) * w + b, with rstd and
// -m_shifted * rstd spread over each group's lanes.
template <bool kStream>
inline void octet_apply_avx512(const OctetBlock& blk, float* y, const float* w, const float* b) {
  const __m512* d = blk.d;
  const __m512 rs = blk.rs, neg_mr = blk.neg_mr;
#pragma GCC unroll 8
  for (int e = 0; e < 8; ++e) {
    const __m512 xn = _mm512_fmadd_ps(d[e], spread_octets(rs, e, e + 8), spread_octets(neg_mr, e, e + 8));
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
// with them and stall the next block's independent work. On L2-resident
// data, [128, 512]: 1.1x when each row of four blocks is a pipeline of its
// own, 1.3x through all the rows. The same operations as one block at a
// time: the same bits.
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
#endif  // PLN_HAVE_AVX512

// The scalar forward of groups of G contiguous features (the features-last
// layouts: NC, NTC, NHWC and channels-last NCHW); group k of the row uses
// weight[k * G ...]. kG > 0 fixes the group size at compile time, so the loops
// over a group unroll. The formula is the forward's above.
template <typename T, bool kCenter, int kG = 0>
void forward_groups(const T* x, T* y, int64_t ngroups, int64_t G_rt, const T* w, const T* b,
                    T* mean, T* rstd, T eps) {
  const int64_t G = kG ? kG : G_rt;
  const T inv_g = T(1) / T(G);
  for (int64_t k = 0; k < ngroups; ++k) {
    const T* xk = x + k * G;
    // As forward_chunk, with the shift s = xk[0].
    T m = T(0), v = T(0);
    if (kCenter) {
      for (int64_t j = 1; j < G; ++j) m += xk[j] - xk[0];
      m *= inv_g;
    }
    const auto centred = [&](int64_t j) { return kCenter ? (xk[j] - xk[0]) - m : xk[j]; };
    for (int64_t j = 0; j < G; ++j) v += centred(j) * centred(j);
    const T r = inv_sqrt(v * inv_g + eps);
    for (int64_t j = 0; j < G; ++j) y[k * G + j] = centred(j) * (r * w[k * G + j]) + b[k * G + j];
    mean[k] = kCenter ? xk[0] + m : T(0);
    rstd[k] = r;
  }
}

// One row of NG groups of G contiguous features. The AVX2 kernels take the
// statistics of every block first, then write the outputs: the blocks' long
// reduce-sqrt-divide chains are independent and overlap, where computing each
// block's output right after its statistics would wait on them. The AVX-512
// kernel's blocks are twice as large and keep their values in registers for
// the output, so it runs one block ahead instead (forward_octet_blocks; the
// statistics of the whole row first measured 1.07x slower than no overlap).
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

// The per-row sums for dweight/dbias go into kSumLanes partial sums, one per
// position modulo kSumLanes: the compiler vectorises these without
// reassociating float arithmetic (which would undo the centring above).
constexpr int64_t kSumLanes = 16;

// The scalar backward of one chunk of n positions of one group (as forward_chunk).
template <typename T, bool kCenter>
void backward_chunk(const T* dy, const T* x, int64_t stride, int64_t n, int64_t G,
                    const T* mean, const T* rstd, const T* w, T* dx, double* dw, double* db) {
  // a: mean_j(gy), b: mean_j(d), c: mean_j(gy * y), per position.
  T a[kChunk], b[kChunk], c[kChunk];
  const T inv_g = T(1) / T(G);
  for (int64_t i = 0; i < n; ++i) a[i] = T(0), b[i] = T(0), c[i] = T(0);
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    const T* dyj = dy + j * stride;
    const T wj = w[j];
    for (int64_t i = 0; i < n; ++i) {
      const T d = xj[i] - mean[i];
      const T gy = dyj[i] * wj;
      a[i] += gy;
      if (kCenter) b[i] += d;
      c[i] += gy * d;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const T mean_gy = a[i] * inv_g, mean_d = kCenter ? b[i] * inv_g : T(0);
    c[i] = rstd[i] * (c[i] * inv_g - mean_d * mean_gy);
    a[i] = kCenter ? mean_gy : T(0);
    b[i] = mean_d;
  }
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    const T* dyj = dy + j * stride;
    T* dxj = dx ? dx + j * stride : nullptr;
    const T wj = w[j];
    T sum_dyy[kSumLanes] = {}, sum_dy[kSumLanes] = {};
    const auto position = [&](int64_t i, int64_t lane) {
      const T yv = ((xj[i] - mean[i]) - b[i]) * rstd[i];
      if (dxj) dxj[i] = rstd[i] * (dyj[i] * wj - a[i] - yv * c[i]);
      sum_dyy[lane] += dyj[i] * yv;
      sum_dy[lane] += dyj[i];
    };
    int64_t i = 0;
    for (; i + kSumLanes <= n; i += kSumLanes) {
      for (int64_t l = 0; l < kSumLanes; ++l) position(i + l, l);
    }
    for (; i < n; ++i) position(i, 0);
    if (dw) {
      for (int64_t l = 0; l < kSumLanes; ++l) dw[j] += sum_dyy[l], db[j] += sum_dy[l];
    }
  }
}

#if PLN_HAVE_AVX2
// Scalar twin: backward_chunk (which also takes the positions past the last
// multiple of 8). Eight float positions at a time. The first pass walks the
// group's rows four at a time, so the per-position sums are loaded and stored
// once per four rows; the second pass prefetches the task's next chunk into
// L2 (as forward_chunk_avx2) and, with kStream, writes dx around the cache.
// Per position, the second pass's constants: nbr = -b * rstd (so that
// y = d * rstd + nbr in one rounding), ra = -rstd * mean_j(gy) and
// rc = rstd * mean_j(gy * y):  dx = rstd * gy + ra - y * rc.
template <bool kCenter, bool kStream>
void backward_chunk_avx2(const float* dy, const float* x, int64_t stride, int64_t n, int64_t G,
                         const float* mean, const float* rstd, const float* w, float* dx,
                         double* dw, double* db, NextChunk next) {
  const int64_t nv = n / 8 * 8;
  if (nv > 0) {
    alignas(32) float ra[kChunk], nbr[kChunk], rc[kChunk];
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < G; j0 += 4) {
      const int64_t rows = std::min<int64_t>(4, G - j0);
      for (int64_t i = 0; i < nv; i += 8) {
        const __m256 m = _mm256_loadu_ps(mean + i);
        __m256 a = j0 ? _mm256_load_ps(ra + i) : zero;
        __m256 b = j0 ? _mm256_load_ps(nbr + i) : zero;
        __m256 c = j0 ? _mm256_load_ps(rc + i) : zero;
        for (int64_t j = j0; j < j0 + rows; ++j) {
          const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j * stride + i), m);
          const __m256 gy = _mm256_mul_ps(_mm256_loadu_ps(dy + j * stride + i), _mm256_set1_ps(w[j]));
          a = _mm256_add_ps(a, gy);
          if (kCenter) b = _mm256_add_ps(b, d);
          c = _mm256_fmadd_ps(gy, d, c);
        }
        _mm256_store_ps(ra + i, a);
        _mm256_store_ps(nbr + i, b);
        _mm256_store_ps(rc + i, c);
      }
    }
    const __m256 inv_g = _mm256_set1_ps(1.f / float(G));
    for (int64_t i = 0; i < nv; i += 8) {
      const __m256 r = _mm256_loadu_ps(rstd + i);
      const __m256 mean_gy = _mm256_mul_ps(_mm256_load_ps(ra + i), inv_g);
      const __m256 mean_d = kCenter ? _mm256_mul_ps(_mm256_load_ps(nbr + i), inv_g) : zero;
      const __m256 c = _mm256_fnmadd_ps(mean_d, mean_gy, _mm256_mul_ps(_mm256_load_ps(rc + i), inv_g));
      _mm256_store_ps(ra + i, kCenter ? _mm256_sub_ps(zero, _mm256_mul_ps(r, mean_gy)) : zero);
      _mm256_store_ps(nbr + i, _mm256_sub_ps(zero, _mm256_mul_ps(mean_d, r)));
      _mm256_store_ps(rc + i, _mm256_mul_ps(_mm256_mul_ps(r, c), r));
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xj = x + j * stride;
      const float* dyj = dy + j * stride;
      float* dxj = dx ? dx + j * stride : nullptr;
      const __m256 wj = _mm256_set1_ps(w[j]);
      __m256 sum_dyy = zero, sum_dy = zero;
      for (int64_t i = 0; i < nv; i += 8) {
        if (i % 16 == 0 && i < next.n) {
          _mm_prefetch(xj + next.offset + i, _MM_HINT_T1);
          _mm_prefetch(dyj + next.offset + i, _MM_HINT_T1);
        }
        const __m256 r = _mm256_loadu_ps(rstd + i);
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xj + i), _mm256_loadu_ps(mean + i));
        const __m256 yv = _mm256_fmadd_ps(d, r, _mm256_load_ps(nbr + i));
        const __m256 dyv = _mm256_loadu_ps(dyj + i);
        if (dxj) {
          const __m256 t = _mm256_fmadd_ps(r, _mm256_mul_ps(dyv, wj), _mm256_load_ps(ra + i));
          const __m256 v = _mm256_fnmadd_ps(yv, _mm256_load_ps(rc + i), t);
          if (kStream) {
            _mm256_stream_ps(dxj + i, v);
          } else {
            _mm256_storeu_ps(dxj + i, v);
          }
        }
        sum_dyy = _mm256_fmadd_ps(dyv, yv, sum_dyy);
        sum_dy = _mm256_add_ps(sum_dy, dyv);
      }
      if (dw) {
        alignas(32) float p[8], q[8];
        _mm256_store_ps(p, sum_dyy);
        _mm256_store_ps(q, sum_dy);
        for (int l = 0; l < 8; ++l) dw[j] += p[l], db[j] += q[l];
      }
    }
  }
  if (nv < n) {
    backward_chunk<float, kCenter>(dy + nv, x + nv, stride, n - nv, G, mean + nv, rstd + nv, w,
                                   dx ? dx + nv : nullptr, dw, db);
  }
}
#endif  // PLN_HAVE_AVX2

template <typename T, bool kCenter, int kG = 0>
void backward_groups(const T* dy, const T* x, int64_t NG, int64_t G_rt, const T* mean,
                     const T* rstd, const T* w, T* dx, T* dw, T* db);

#if PLN_HAVE_AVX2
// The backward of kLanes consecutive groups of G = kLanes * V contiguous
// features (kV = 0: V at run time); dw/db are this task's partial sums for the
// same features. Scalar twin: backward_groups (the sums a, b, c per group).
template <typename T, bool kCenter, int kV>
inline void backward_groups_avx2(const T* dy, const T* x, const T* mean, const T* rstd,
                                 const T* w, T* dx, T* dw, T* db, int64_t V_rt) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  // Per group (lane l after the transposing sums): sum gy, sum d and sum gy * d
  // with d = x - mean; see backward_chunk. A group of one register (V = 1)
  // shares the first transpose step between the three.
  Vec sum_gy[kL], sum_gyd[kL], sum_d[kL];
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const Vec mu_l = L::bcast(mean + l);
    Vec a = L::zero(), c = L::zero(), e = L::zero();
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const Vec d = L::sub(L::load(x + o), mu_l);
      const Vec gy = L::mul(L::load(dy + o), L::load(w + o));
      if (kV == 1) {
        a = gy, e = d;
      } else {
        a = L::add(a, gy);
        c = L::fmadd(gy, d, c);
        if (kCenter) e = L::add(e, d);
      }
    }
    sum_gy[l] = a;
    sum_gyd[l] = c;
    sum_d[l] = e;
  }
  Vec total_gy, total_d, total_gyd;
  if (kV == 1) {
    transpose_sum3<L>(sum_gy, sum_d, total_gy, total_d, total_gyd);
  } else {
    total_gy = transpose_sum<L>(sum_gy);
    total_d = kCenter ? transpose_sum<L>(sum_d) : L::zero();
    total_gyd = transpose_sum<L>(sum_gyd);
  }
  const Vec inv_g = L::set1(T(1) / T(G));
  const Vec mean_gy = L::mul(total_gy, inv_g);
  const Vec mean_d = kCenter ? L::mul(total_d, inv_g) : L::zero();
  const Vec mean_gyy = L::mul(L::load(rstd), L::fnmadd(mean_d, mean_gy, L::mul(total_gyd, inv_g)));
  alignas(32) T a_[kL], b_[kL], c_[kL];
  L::store(a_, kCenter ? mean_gy : L::zero());
  L::store(b_, mean_d);
  L::store(c_, mean_gyy);
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const Vec mu_l = L::bcast(mean + l), r_l = L::bcast(rstd + l);
    const Vec a_l = L::bcast(a_ + l), b_l = L::bcast(b_ + l), c_l = L::bcast(c_ + l);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const Vec dyv = L::load(dy + o);
      const Vec yv = L::mul(L::sub(L::sub(L::load(x + o), mu_l), b_l), r_l);
      if (dx) {
        const Vec gy_a = L::fmsub(dyv, L::load(w + o), a_l);
        L::store(dx + o, L::mul(r_l, L::fnmadd(yv, c_l, gy_a)));
      }
      if (dw) {
        L::store(dw + o, L::fmadd(dyv, yv, L::load(dw + o)));
        L::store(db + o, L::add(dyv, L::load(db + o)));
      }
    }
  }
}
#endif  // PLN_HAVE_AVX2

#if PLN_HAVE_AVX512
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
// so both give the same bits: a row mixes them, and records made before this
// kernel existed rerun to the same bits (results_rerun_bit_for_bit). ~1.25x
// over the AVX2 path (kernel alone, data in L2). Scalar twin:
// backward_groups<float, kCenter, 8>.
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
// sums of block j + 1 before the outputs of block j; 1.03x on L2-resident
// data, the backward's chain being shorter). The two loops are written out:
// one helper taking the two steps as lambdas measured 1.05-1.1x slower in
// both (GCC 12).
//
// kStream (dx of kStreamBytes or more, rows 64-byte aligned; the caller
// fences): dx is written around the cache and x and dy are prefetched 8 KiB
// ahead. On a Zen 5 machine, one thread, [4096, 512] (8 MiB), the kernel
// took 0.46-0.49 ns a value stored through the cache and 0.23 with both
// (0.34 streamed alone, 0.35 prefetched 4 KiB ahead alone), followed by a read of dx
// 0.52-0.61 against 0.33-0.34; at 16 MiB 0.56-0.58 against 0.23-0.34. At
// 4 MiB, where x, dy and dx stay in the L3, streaming lost with the read
// (0.32 against 0.29 ns), hence the common threshold. On a Zen 4 machine
// the kernel is at its arithmetic (0.31-0.33 ns a value on L2-resident data
// and with 4 MiB each in the L3), and streamed and prefetched it took
// 0.41-0.61 against 0.42-0.54 at one thread (8 and 16 MiB) and 0.56-0.63
// against 0.37-0.49 ns a value and thread at two (each alone: 0.41-0.54),
// so it streams only where streams_octet_backward() says.
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

// The scalar backward of groups of G contiguous features (as forward_groups).
template <typename T, bool kCenter, int kG>
void backward_groups(const T* dy, const T* x, int64_t NG, int64_t G_rt, const T* mean,
                     const T* rstd, const T* w, T* dx, T* dw, T* db) {
  const int64_t G = kG ? kG : G_rt;
  const T inv_g = T(1) / T(G);
  for (int64_t k = 0; k < NG; ++k) {
    // As backward_chunk, for one group.
    const int64_t o = k * G;
    const T m = mean[k], r = rstd[k];
    T a = T(0), b = T(0), c = T(0);
    for (int64_t j = 0; j < G; ++j) {
      const T d = x[o + j] - m;
      const T gy = dy[o + j] * w[o + j];
      a += gy;
      if (kCenter) b += d;
      c += gy * d;
    }
    a *= inv_g;
    b = kCenter ? b * inv_g : T(0);
    c = r * (c * inv_g - b * a);
    if (!kCenter) a = T(0);
    for (int64_t j = 0; j < G; ++j) {
      const T yv = ((x[o + j] - m) - b) * r;
      if (dx) dx[o + j] = r * (dy[o + j] * w[o + j] - a - yv * c);
      if (dw) dw[o + j] += dy[o + j] * yv, db[o + j] += dy[o + j];
    }
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
