#pragma once
// The vector vocabulary of the kernels written once for every capability
// (kernels/large_groups.h): one register of T as a type with static
// operations, in the manner of ATen's vec::Vectorized. ScalarVec<T> is one
// lane and compiles everywhere; Avx2Vec<T>, Avx512Vec<T> (x86-64) and
// NeonVec<T> (aarch64) exist in the compilations that target them, and
// NativeVec<T> names the widest this compilation has (the kernels are
// instantiated once per capability, see cpu/capability.h). Every type offers
// the same names:
//
//   kLanes                      values in one register
//   load(p) / store(p, v)       unaligned
//   stream(p, v)                a store around the cache, p aligned to the
//                               register's size (a plain store for ScalarVec
//                               and NeonVec)
//   set1(s), zero()
//   add, sub, mul, div, sqrt, fmadd(a, b, c) = a * b + c
//   min, max, round(v)          round to the nearest integer, ties to even
//   ldexp(v, n)                 v * 2^n for integral n, where both v and the
//                               result are normal numbers (exp() below)
//   sum(v)                      the lanes' total, added in pairs
//   accumulate(double* lanes, v): lanes[l] += v[l], widened to double (the
//                               blocked sums across rows, see large_groups.h)
//   Wide, wide_zero(), widen_add(acc, v), wide_sum(acc): a double register
//                               that sums v's lanes in pairs, and its total
//                               (the blocked sums along a group)
//
// exp(v) is written once over these names (the gated norm's activations).
//
// Part of the fused kernels of src/cpu/kernels.cpp and src/cpu/gated_kernels.cpp,
// inside their per-capability namespace.

#include <array>
#include <cmath>
#include <type_traits>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

template <typename T>
struct ScalarVec {
  using Value = T;
  using V = T;
  static constexpr int kLanes = 1;
  static V load(const T* p) { return *p; }
  static void store(T* p, V v) { *p = v; }
  static void stream(T* p, V v) { *p = v; }
  static V set1(T s) { return s; }
  static V zero() { return T(0); }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V sqrt(V a) { return std::sqrt(a); }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V round(V v) { return std::nearbyint(v); }
  static V ldexp(V v, V n) { return std::ldexp(v, static_cast<int>(n)); }
  static T sum(V v) { return v; }
  static void accumulate(double* lanes, V v) { lanes[0] += static_cast<double>(v); }
  using Wide = double;
  static Wide wide_zero() { return 0.0; }
  static void widen_add(Wide& acc, V v) { acc += static_cast<double>(v); }
  static double wide_sum(Wide acc) { return acc; }
};

#if PLN_HAVE_AVX2
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
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  static V set1(float s) { return _mm256_set1_ps(s); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
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
};

template <>
struct Avx2Vec<double> {
  using Value = double;
  using V = __m256d;
  static constexpr int kLanes = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static void stream(double* p, V v) { _mm256_stream_pd(p, v); }
  static V set1(double s) { return _mm256_set1_pd(s); }
  static V zero() { return _mm256_setzero_pd(); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_pd(a); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
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
};
#endif  // PLN_HAVE_AVX2

#if PLN_HAVE_AVX512
template <typename T>
struct Avx512Vec;

template <>
struct Avx512Vec<float> {
  using Value = float;
  using V = __m512;
  static constexpr int kLanes = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static V set1(float s) { return _mm512_set1_ps(s); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V round(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V v, V n) { return _mm512_scalef_ps(v, n); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
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
};

template <>
struct Avx512Vec<double> {
  using Value = double;
  using V = __m512d;
  static constexpr int kLanes = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static void stream(double* p, V v) { _mm512_stream_pd(p, v); }
  static V set1(double s) { return _mm512_set1_pd(s); }
  static V zero() { return _mm512_setzero_pd(); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_pd(a); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
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
};
#endif  // PLN_HAVE_AVX512

#if PLN_HAVE_NEON
// aarch64's Advanced SIMD: 128-bit registers, four floats or two doubles.
// stream() is a plain store: the kernels decide to stream only with AVX2
// (kStreams in cpu/kernels.cpp), and AArch64's non-temporal stores (STNP)
// are a hint that cores may ignore.
template <typename T>
struct NeonVec;

template <>
struct NeonVec<float> {
  using Value = float;
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static void stream(float* p, V v) { vst1q_f32(p, v); }
  static V set1(float s) { return vdupq_n_f32(s); }
  static V zero() { return vdupq_n_f32(0.f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V sqrt(V a) { return vsqrtq_f32(a); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V min(V a, V b) { return vminq_f32(a, b); }
  static V max(V a, V b) { return vmaxq_f32(a, b); }
  static V round(V v) { return vrndnq_f32(v); }
  static V ldexp(V v, V n) {
    return vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(v), vshlq_n_s32(vcvtq_s32_f32(n), 23)));
  }
  // (v0 + v1) + (v2 + v3): two pairwise adds.
  static float sum(V v) { return vpadds_f32(vget_low_f32(vpaddq_f32(v, v))); }
  static void accumulate(double* lanes, V v) {
    vst1q_f64(lanes, vaddq_f64(vld1q_f64(lanes), vcvt_f64_f32(vget_low_f32(v))));
    vst1q_f64(lanes + 2, vaddq_f64(vld1q_f64(lanes + 2), vcvt_high_f64_f32(v)));
  }
  using Wide = float64x2_t;  // lanes l and l + 2 added when widened
  static Wide wide_zero() { return vdupq_n_f64(0.0); }
  static void widen_add(Wide& acc, V v) {
    acc = vaddq_f64(acc, vaddq_f64(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v)));
  }
  static double wide_sum(Wide acc) { return vpaddd_f64(acc); }
};

template <>
struct NeonVec<double> {
  using Value = double;
  using V = float64x2_t;
  static constexpr int kLanes = 2;
  static V load(const double* p) { return vld1q_f64(p); }
  static void store(double* p, V v) { vst1q_f64(p, v); }
  static void stream(double* p, V v) { vst1q_f64(p, v); }
  static V set1(double s) { return vdupq_n_f64(s); }
  static V zero() { return vdupq_n_f64(0.0); }
  static V add(V a, V b) { return vaddq_f64(a, b); }
  static V sub(V a, V b) { return vsubq_f64(a, b); }
  static V mul(V a, V b) { return vmulq_f64(a, b); }
  static V div(V a, V b) { return vdivq_f64(a, b); }
  static V sqrt(V a) { return vsqrtq_f64(a); }
  static V fmadd(V a, V b, V c) { return vfmaq_f64(c, a, b); }
  static V min(V a, V b) { return vminq_f64(a, b); }
  static V max(V a, V b) { return vmaxq_f64(a, b); }
  static V round(V v) { return vrndnq_f64(v); }
  static V ldexp(V v, V n) {
    return vreinterpretq_f64_s64(vaddq_s64(vreinterpretq_s64_f64(v), vshlq_n_s64(vcvtq_s64_f64(n), 52)));
  }
  static double sum(V v) { return vpaddd_f64(v); }
  static void accumulate(double* lanes, V v) { vst1q_f64(lanes, vaddq_f64(vld1q_f64(lanes), v)); }
  using Wide = float64x2_t;
  static Wide wide_zero() { return vdupq_n_f64(0.0); }
  static void widen_add(Wide& acc, V v) { acc = vaddq_f64(acc, v); }
  static double wide_sum(Wide acc) { return vpaddd_f64(acc); }
};
#endif  // PLN_HAVE_NEON

// The widest vector type of this compilation.
#if PLN_HAVE_AVX512
template <typename T>
using NativeVec = Avx512Vec<T>;
#elif PLN_HAVE_AVX2
template <typename T>
using NativeVec = Avx2Vec<T>;
#elif PLN_HAVE_NEON
template <typename T>
using NativeVec = NeonVec<T>;
#else
template <typename T>
using NativeVec = ScalarVec<T>;
#endif

// exp(x) in every lane of a register of a vocabulary type W, within a few
// units of rounding: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts,
// so that n ln 2 is exact), e^r by its Taylor series to r^7 (float) or r^13
// (double), whose first term left out is below half a unit of rounding, and
// e^x = e^r 2^n by the exponent's bits. x is first clamped to where e^x and
// the steps to it are normal numbers ([-86, 88] in float, [-708, 709] in
// double), so e^x there is e^-86 or e^88 (the sigmoid saturates long before).
template <typename W>
inline typename W::V exp(typename W::V x) {
  using T = typename W::Value;
  constexpr bool kFloat = std::is_same_v<T, float>;
  constexpr int kTerms = kFloat ? 7 : 13;
  // The bound first: x86's min and max return their second operand where one is NaN, so a NaN stays NaN.
  x = W::min(W::set1(kFloat ? T(88) : T(709)), W::max(W::set1(kFloat ? T(-86) : T(-708)), x));
  const auto n = W::round(W::mul(x, W::set1(T(1.4426950408889634))));
  const T ln2_hi = kFloat ? T(0.693359375) : T(0.693147180369123816490);
  const T ln2_lo = kFloat ? T(-2.12194440e-4) : T(1.90821492927058770002e-10);
  const auto r = W::fmadd(n, W::set1(-ln2_lo), W::fmadd(n, W::set1(-ln2_hi), x));
  static constexpr auto kCoefficients = [] {  // 1 / k!
    std::array<T, kTerms + 1> c{};
    c[0] = T(1);
    for (int k = 1; k <= kTerms; ++k) c[k] = c[k - 1] / T(k);
    return c;
  }();
  auto p = W::set1(kCoefficients[kTerms]);
  for (int k = kTerms - 1; k >= 0; --k) p = W::fmadd(p, r, W::set1(kCoefficients[k]));
  return W::ldexp(p, n);
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
