#pragma once
// The vocabulary's aarch64 type (see vec.h): NeonVec<T>, Advanced SIMD's
// 128-bit registers, four floats or two doubles. stream() is a plain store
// (kStreams is false): AArch64's non-temporal stores (STNP) are a hint that
// cores may ignore.

#include "cpu/capability.h"
#include "cpu/storage.h"

#if PLN_HAVE_NEON
namespace pln::cpu::PLN_CPU_NS {
namespace {

template <typename T>
struct NeonVec;

template <>
struct NeonVec<float> {
  using Value = float;
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kGroupMultiple = 4;
  static constexpr bool kStreams = false;
  static V load(const float* p) { return vld1q_f32(p); }
  static V load(const bfloat16* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
  }
  static V load(const float16* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  // Rounded to nearest even on the upper half (a NaN to 0x7FC0, as narrow()).
  static void store(bfloat16* p, V v) {
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t odd = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vshrq_n_u32(vaddq_u32(u, vaddq_u32(odd, vdupq_n_u32(0x7FFF))), 16);
    r = vbslq_u32(vceqq_f32(v, v), r, vdupq_n_u32(0x7FC0));
    vst1_u16(reinterpret_cast<uint16_t*>(p), vmovn_u32(r));
  }
  static void store(float16* p, V v) {
    vst1_u16(reinterpret_cast<uint16_t*>(p), vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
  template <typename S>
  static void stream(S* p, V v) {
    store(p, v);
  }
  static void stream_fence() {}
  static V set1(float s) { return vdupq_n_f32(s); }
  static V zero() { return vdupq_n_f32(0.f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V sqrt(V a) { return vsqrtq_f32(a); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fmsub(V a, V b, V c) { return vfmaq_f32(vnegq_f32(c), a, b); }
  static V fnmadd(V a, V b, V c) { return vfmsq_f32(c, a, b); }
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

  static V zip_lo(V a, V b) { return vzip1q_f32(a, b); }
  static V zip_hi(V a, V b) { return vzip2q_f32(a, b); }
  // From [a0+a2, b0+b2, a1+a3, b1+b3] and the same of (c, d).
  static V finish_transpose_sum(const V* q) {
    return add(vcombine_f32(vget_low_f32(q[0]), vget_low_f32(q[1])),
               vcombine_f32(vget_high_f32(q[0]), vget_high_f32(q[1])));
  }
  static void transpose(V* r) {
    const V t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const V t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    const auto pairs = [](V a, V b, bool second) {
      const float64x2_t a2 = vreinterpretq_f64_f32(a), b2 = vreinterpretq_f64_f32(b);
      return vreinterpretq_f32_f64(second ? vtrn2q_f64(a2, b2) : vtrn1q_f64(a2, b2));
    };
    r[0] = pairs(t0, t2, false);
    r[1] = pairs(t1, t3, false);
    r[2] = pairs(t0, t2, true);
    r[3] = pairs(t1, t3, true);
  }
};

template <>
struct NeonVec<double> {
  using Value = double;
  using V = float64x2_t;
  static constexpr int kLanes = 2;
  static constexpr bool kStreams = false;
  static constexpr int kGroupMultiple = 2;
  static V load(const double* p) { return vld1q_f64(p); }
  static V load(const float* p) { return vcvt_f64_f32(vld1_f32(p)); }
  static void store(double* p, V v) { vst1q_f64(p, v); }
  static void store(float* p, V v) { vst1_f32(p, vcvt_f32_f64(v)); }
  template <typename S>
  static void stream(S* p, V v) {
    store(p, v);
  }
  static void stream_fence() {}
  static V set1(double s) { return vdupq_n_f64(s); }
  static V zero() { return vdupq_n_f64(0.0); }
  static V add(V a, V b) { return vaddq_f64(a, b); }
  static V sub(V a, V b) { return vsubq_f64(a, b); }
  static V mul(V a, V b) { return vmulq_f64(a, b); }
  static V div(V a, V b) { return vdivq_f64(a, b); }
  static V sqrt(V a) { return vsqrtq_f64(a); }
  static V fmadd(V a, V b, V c) { return vfmaq_f64(c, a, b); }
  static V fmsub(V a, V b, V c) { return vfmaq_f64(vnegq_f64(c), a, b); }
  static V fnmadd(V a, V b, V c) { return vfmsq_f64(c, a, b); }
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

  static V zip_lo(V a, V b) { return vzip1q_f64(a, b); }
  static V zip_hi(V a, V b) { return vzip2q_f64(a, b); }
  // [a0+a1, b0+b1] is the total already.
  static V finish_transpose_sum(const V* q) { return q[0]; }
  static void transpose(V* r) {
    const V lo = vzip1q_f64(r[0], r[1]), hi = vzip2q_f64(r[0], r[1]);
    r[0] = lo, r[1] = hi;
  }
};

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
#endif  // PLN_HAVE_NEON
