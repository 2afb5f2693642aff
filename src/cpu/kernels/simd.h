#pragma once
// The kernels' private SIMD vocabulary: one AVX2 register of float or double
// groups (Lanes), the transposing sums that reduce kLanes groups at once, and
// the transposition of float groups of 4 (Quads); the scalar kernels' 1/sqrt.
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cmath>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

template <typename T>
inline T inv_sqrt(T v) {
  return T(1) / std::sqrt(v);
}

#if PLN_HAVE_AVX2
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

// Lane l: the sums of the lanes of g[l], of d[l] and of g[l] * d[l] (scalar
// twin: backward_groups' sums a, b, c); the first transpose step of the
// products is shared: multiplying lane by lane commutes with the shuffles.
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

// Register j: float j of each of the eight groups of 8 at p (lane l: group l).
inline void transpose8(const float* p, __m256 t[8]) {
  __m256 r[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(p + 8 * i);
  for (int i = 0; i < 4; ++i) {
    u[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    u[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    for (int h = 0; h < 2; ++h) {
      const __m256 a = u[4 * i + h], b = u[4 * i + 2 + h];
      r[4 * i + 2 * h] = _mm256_shuffle_ps(a, b, 0x44);
      r[4 * i + 2 * h + 1] = _mm256_shuffle_ps(a, b, 0xEE);
    }
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
    t[4 + j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
  }
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
#endif  // PLN_HAVE_AVX2

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
