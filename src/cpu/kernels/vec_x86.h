#pragma once
// The vocabulary's x86-64 types (see vec.h): Avx2Vec<T> where the compilation
// targets AVX2, FMA and F16C, Avx512Vec<T> where it adds AVX-512 F/DQ/VL/BW.

#include "cpu/capability.h"
#include "cpu/storage.h"

#if PLN_HAVE_AVX2
namespace pln::cpu::PLN_CPU_NS {
namespace {

// The sum of the four lanes, pairwise.
inline double avx2_sum(__m256d v) {
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
}

template <typename T>
struct Avx2Vec;

template <>
struct Avx2Vec<float> {
  using Value = float;
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kGroupMultiple = 8;
  static constexpr bool kStreams = true;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const bfloat16* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static V load(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(bfloat16* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bfloat16_bits(v)); }
  static void store(float16* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), float16_bits(v)); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  static void stream(bfloat16* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), bfloat16_bits(v)); }
  static void stream(float16* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), float16_bits(v)); }
  static void stream_fence() { _mm_sfence(); }
  // Rounded to nearest even on the upper half (a NaN to 0x7FC0, as narrow()).
  static __m128i bfloat16_bits(V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  }
  static __m128i float16_bits(V v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V set1(float s) { return _mm256_set1_ps(s); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V v, V n) {
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), e));
  }
  static float sum(V v) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
  }
  // Lane l: sum(v[l]), bit for bit, for eight registers (as Avx512Vec's):
  // lane 4q + j ends up holding register 2j + q's total.
  static constexpr bool kLaneSums = true;
  static V lane_sums(const V* v) {
    V a[4], c[2];
    for (int k = 0; k < 4; ++k) {
      a[k] = add(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20), _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31));
    }
    for (int k = 0; k < 2; ++k) {
      c[k] = add(_mm256_shuffle_ps(a[2 * k], a[2 * k + 1], 0x44), _mm256_shuffle_ps(a[2 * k], a[2 * k + 1], 0xEE));
    }
    const V d = add(_mm256_shuffle_ps(c[0], c[1], 0x88), _mm256_shuffle_ps(c[0], c[1], 0xDD));
    return _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static void accumulate(double* lanes, V v) {
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    _mm256_storeu_pd(lanes, _mm256_add_pd(_mm256_loadu_pd(lanes), lo));
    _mm256_storeu_pd(lanes + 4, _mm256_add_pd(_mm256_loadu_pd(lanes + 4), hi));
  }
  using Wide = __m256d;  // lanes l and l + 4 added when widened
  static Wide wide_zero() { return _mm256_setzero_pd(); }
  static void widen_add(Wide& acc, V v) {
    acc = _mm256_add_pd(acc, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                           _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
  }
  static double wide_sum(Wide acc) { return avx2_sum(acc); }

  static V zip_lo(V a, V b) { return _mm256_unpacklo_ps(a, b); }
  static V zip_hi(V a, V b) { return _mm256_unpackhi_ps(a, b); }
  // From [a0+a2, b0+b2, a1+a3, b1+b3 | lanes 4-7 alike] for four pairs (a, b).
  static V finish_transpose_sum(const V* q) {
    const V lo = add(_mm256_shuffle_ps(q[0], q[1], 0x44), _mm256_shuffle_ps(q[0], q[1], 0xEE));
    const V hi = add(_mm256_shuffle_ps(q[2], q[3], 0x44), _mm256_shuffle_ps(q[2], q[3], 0xEE));
    return add(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
  }
  static void transpose(V* r) {
    V u[8];
    for (int i = 0; i < 4; ++i) {
      u[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      u[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
      for (int h = 0; h < 2; ++h) {
        const V a = u[4 * i + h], b = u[4 * i + 2 + h];
        r[4 * i + 2 * h] = _mm256_shuffle_ps(a, b, 0x44);
        r[4 * i + 2 * h + 1] = _mm256_shuffle_ps(a, b, 0xEE);
      }
    }
    for (int j = 0; j < 4; ++j) {
      const V lo = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20), hi = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
      u[j] = lo, u[4 + j] = hi;
    }
    for (int j = 0; j < 8; ++j) r[j] = u[j];
  }

  // Groups of 4 are half a register: eight of them (four registers) are
  // transposed so that register j holds feature j of every group, in the
  // lane order of groups 0, 2, 4, 6, 1, 3, 5, 7 (two shuffle levels; the
  // third, to group order, is left to the statistics' one permutation).
  static void quads_in(V* e) {
    const V t0 = _mm256_unpacklo_ps(e[0], e[1]), t1 = _mm256_unpackhi_ps(e[0], e[1]);
    const V t2 = _mm256_unpacklo_ps(e[2], e[3]), t3 = _mm256_unpackhi_ps(e[2], e[3]);
    e[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    e[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    e[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    e[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
  }
  static void quads_out(V* e) {
    const V t0 = _mm256_shuffle_ps(e[0], e[1], 0x44), t2 = _mm256_shuffle_ps(e[0], e[1], 0xEE);
    const V t1 = _mm256_shuffle_ps(e[2], e[3], 0x44), t3 = _mm256_shuffle_ps(e[2], e[3], 0xEE);
    e[0] = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(2, 0, 2, 0));
    e[1] = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 1, 3, 1));
    e[2] = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(2, 0, 2, 0));
    e[3] = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static V quads_to_groups(V v) { return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); }
  static V quads_to_lanes(V v) { return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)); }
  // Register i of the row's groups in place: groups 2i and 2i + 1 of v (group order), four lanes each.
  static V quads_spread(V v, int i) {
    const int lo = 2 * i, hi = 2 * i + 1;
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi));
  }
  // Each group's first value over its four lanes.
  static V quads_first(V v) { return _mm256_permute_ps(v, 0x00); }
};

template <>
struct Avx2Vec<double> {
  using Value = double;
  using V = __m256d;
  static constexpr int kLanes = 4;
  static constexpr bool kStreams = true;
  static constexpr int kGroupMultiple = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V load(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static void store(float* p, V v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
  static void stream(double* p, V v) { _mm256_stream_pd(p, v); }
  static void stream_fence() { _mm_sfence(); }
  static V set1(double s) { return _mm256_set1_pd(s); }
  static V zero() { return _mm256_setzero_pd(); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_pd(a); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_pd(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_pd(a, b, c); }
  static V min(V a, V b) { return _mm256_min_pd(a, b); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V round(V v) { return _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V v, V n) {
    const __m256i e = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), 52);
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(v), e));
  }
  static double sum(V v) { return avx2_sum(v); }
  static void accumulate(double* lanes, V v) { _mm256_storeu_pd(lanes, _mm256_add_pd(_mm256_loadu_pd(lanes), v)); }
  using Wide = __m256d;
  static Wide wide_zero() { return _mm256_setzero_pd(); }
  static void widen_add(Wide& acc, V v) { acc = _mm256_add_pd(acc, v); }
  static double wide_sum(Wide acc) { return avx2_sum(acc); }

  static V zip_lo(V a, V b) { return _mm256_unpacklo_pd(a, b); }
  static V zip_hi(V a, V b) { return _mm256_unpackhi_pd(a, b); }
  // From [a0+a1, b0+b1 | a2+a3, b2+b3] and the same of (c, d).
  static V finish_transpose_sum(const V* q) {
    return add(_mm256_permute2f128_pd(q[0], q[1], 0x20), _mm256_permute2f128_pd(q[0], q[1], 0x31));
  }
  static void transpose(V* r) {
    const V t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const V t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  }
};

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
#endif  // PLN_HAVE_AVX2

#if PLN_HAVE_AVX512
namespace pln::cpu::PLN_CPU_NS {
namespace {

template <typename T>
struct Avx512Vec;

template <>
struct Avx512Vec<float> {
  using Value = float;
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kGroupMultiple = 0;  // no transposition
  static constexpr bool kStreams = true;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const bfloat16* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static V load(const float16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(bfloat16* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bfloat16_bits(v)); }
  static void store(float16* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), float16_bits(v)); }
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static void stream(bfloat16* p, V v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), bfloat16_bits(v)); }
  static void stream(float16* p, V v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), float16_bits(v)); }
  static void stream_fence() { _mm_sfence(); }
  static __m256i bfloat16_bits(V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
    r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(r);
  }
  static __m256i float16_bits(V v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V set1(float s) { return _mm512_set1_ps(s); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V round(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V v, V n) { return _mm512_scalef_ps(v, n); }
  // Lanes l and l + 8 added, then l + 4, l + 2 and l + 1 (the tree of
  // lane_sums, and of GCC's _mm512_reduce_add_ps).
  static float sum(V v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
  }
  // Lane l: sum(v[l]), bit for bit, for sixteen registers: each level of
  // sum's tree taken for two registers a shuffle pair. Lane 4q + j ends up
  // holding register 4j + q's total, put in place by one permutation.
  static constexpr bool kLaneSums = true;
  static V lane_sums(const V* v) {
    V a[8], b[4], c[2];
    for (int k = 0; k < 8; ++k) {
      a[k] = add(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44), _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
    }
    for (int k = 0; k < 4; ++k) {
      b[k] = add(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x88), _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xDD));
    }
    for (int k = 0; k < 2; ++k) {
      c[k] = add(_mm512_shuffle_ps(b[2 * k], b[2 * k + 1], 0x44), _mm512_shuffle_ps(b[2 * k], b[2 * k + 1], 0xEE));
    }
    const V d = add(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), d);
  }
  static void accumulate(double* lanes, V v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    _mm512_storeu_pd(lanes, _mm512_add_pd(_mm512_loadu_pd(lanes), lo));
    _mm512_storeu_pd(lanes + 8, _mm512_add_pd(_mm512_loadu_pd(lanes + 8), hi));
  }
  using Wide = __m512d;  // lanes l and l + 8 added when widened
  static Wide wide_zero() { return _mm512_setzero_pd(); }
  static void widen_add(Wide& acc, V v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    acc = _mm512_add_pd(acc, _mm512_add_pd(lo, hi));
  }
  static double wide_sum(Wide acc) { return _mm512_reduce_add_pd(acc); }

  static V zip_lo(V a, V b) { return _mm512_unpacklo_ps(a, b); }
  static V zip_hi(V a, V b) { return _mm512_unpackhi_ps(a, b); }

  // Blocks of sixteen groups of 8 (octets.h): register e holds groups 2e and
  // 2e + 1. octet_tree finishes the reduction tree after its first level
  // (zip_lo/zip_hi of each pair of registers, added: q[k] from registers 2k
  // and 2k + 1): level 2 leaves in lane i of 128-bit lane L of P (Q) the sum
  // over 128-bit lane L of register i (4 + i); level 3 gives 128-bit lanes
  // [P0 + P1, Q0 + Q1, P2 + P3, Q2 + Q3], so lane p holds the sum of group
  // 2 (p % 8) + (p >= 8) ("tree order").
  static V octet_tree(const V* q) {
    const auto level2 = [](V a, V b) { return add(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE)); };
    const __m512i first_halves = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i second_halves = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    const V P = level2(q[0], q[1]), Q = level2(q[2], q[3]);
    return add(_mm512_permutex2var_ps(P, first_halves, Q), _mm512_permutex2var_ps(P, second_halves, Q));
  }
  // Register e's groups from a statistic in tree order (whose group 2e sits
  // in lane e, group 2e + 1 in lane e + 8): lanes 0-7 and 8-15.
  static V octet_spread(V v, int e) {
    const int lo = e, hi = e + 8;
    return _mm512_permutexvar_ps(_mm512_setr_epi32(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi),
                                 v);
  }
  // Tree order's lanes e and e + 8 taken from r, the others from v.
  static V octet_blend(V v, V r, int e) { return _mm512_mask_blend_ps(__mmask16((1u << e) | (1u << (e + 8))), v, r); }
  // Register e's groups from a statistic in group order in memory (two
  // broadcast loads: the shuffle unit, which bounds the backward, is busy).
  static V octet_from_memory(const float* v, int e) {
    return _mm512_mask_broadcastss_ps(_mm512_set1_ps(v[2 * e]), 0xFF00, _mm_load_ss(v + 2 * e + 1));
  }
  static V octet_to_groups(V v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15), v);
  }
  static V octet_to_tree(V v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15), v);
  }
};

template <>
struct Avx512Vec<double> {
  using Value = double;
  using V = __m512d;
  static constexpr int kLanes = 8;
  static constexpr bool kStreams = true;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V load(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
  static void stream(double* p, V v) { _mm512_stream_pd(p, v); }
  static void stream_fence() { _mm_sfence(); }
  static V set1(double s) { return _mm512_set1_pd(s); }
  static V zero() { return _mm512_setzero_pd(); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_pd(a); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_pd(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_pd(a, b, c); }
  static V min(V a, V b) { return _mm512_min_pd(a, b); }
  static V max(V a, V b) { return _mm512_max_pd(a, b); }
  static V round(V v) { return _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V v, V n) { return _mm512_scalef_pd(v, n); }
  static double sum(V v) { return _mm512_reduce_add_pd(v); }
  static void accumulate(double* lanes, V v) { _mm512_storeu_pd(lanes, _mm512_add_pd(_mm512_loadu_pd(lanes), v)); }
  using Wide = __m512d;
  static Wide wide_zero() { return _mm512_setzero_pd(); }
  static void widen_add(Wide& acc, V v) { acc = _mm512_add_pd(acc, v); }
  static double wide_sum(Wide acc) { return _mm512_reduce_add_pd(acc); }

  // Eight consecutive groups of G values (G a multiple of 4) at p, one per
  // lane (the jets' kernels): register j holds value j of every group, in
  // the lane order of groups 0, 2, 1, 3, 4, 6, 5, 7 (the same for every j,
  // so lane-wise work needs no other). Chunk k of groups 2i and 2i + 1 is
  // row i; two rounds of shuffles transpose the rows. groups_out undoes it.
  static constexpr int kGroupMultiple = 4;
  static __m256d quarter(const double* p) { return _mm256_loadu_pd(p); }
  static __m256d quarter(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static void put_quarter(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
  static void put_quarter(float* p, __m256d v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
  template <typename S>
  static V row(const S* p, int64_t G, int64_t k) {
    return _mm512_insertf64x4(_mm512_castpd256_pd512(quarter(p + k)), quarter(p + G + k), 1);
  }
  template <typename S>
  static void put_row(V r, S* p, int64_t G, int64_t k) {
    put_quarter(p + k, _mm512_castpd512_pd256(r));
    put_quarter(p + G + k, _mm512_extractf64x4_pd(r, 1));
  }
  template <typename S>
  static void groups_in(const S* p, int64_t G, V* out) {
    for (int64_t k = 0; k < G; k += 4) {
      const V r0 = row(p, G, k), r1 = row(p + 2 * G, G, k), r2 = row(p + 4 * G, G, k), r3 = row(p + 6 * G, G, k);
      const V t0 = _mm512_unpacklo_pd(r0, r1), t1 = _mm512_unpackhi_pd(r0, r1);
      const V t2 = _mm512_unpacklo_pd(r2, r3), t3 = _mm512_unpackhi_pd(r2, r3);
      out[k] = _mm512_shuffle_f64x2(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
      out[k + 1] = _mm512_shuffle_f64x2(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
      out[k + 2] = _mm512_shuffle_f64x2(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
      out[k + 3] = _mm512_shuffle_f64x2(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
    }
  }
  template <typename S>
  static void groups_out(const V* in, int64_t G, S* p) {
    const __m512i low = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i high = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (int64_t k = 0; k < G; k += 4) {
      const V t0 = _mm512_permutex2var_pd(in[k], low, in[k + 2]), t2 = _mm512_permutex2var_pd(in[k], high, in[k + 2]);
      const V t1 = _mm512_permutex2var_pd(in[k + 1], low, in[k + 3]),
              t3 = _mm512_permutex2var_pd(in[k + 1], high, in[k + 3]);
      put_row(_mm512_unpacklo_pd(t0, t1), p, G, k);
      put_row(_mm512_unpackhi_pd(t0, t1), p + 2 * G, G, k);
      put_row(_mm512_unpacklo_pd(t2, t3), p + 4 * G, G, k);
      put_row(_mm512_unpackhi_pd(t2, t3), p + 6 * G, G, k);
    }
  }
};

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
#endif  // PLN_HAVE_AVX512
