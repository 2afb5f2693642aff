#pragma once
// The types the CPU kernels read and write: float, double, and the two 16-bit
// floats as their bits (the layout of c10::BFloat16 and c10::Half, so that the
// operators pass those tensors' data as they are). A 16-bit value is computed
// in float: widen() on load, narrow() once on store, rounding to nearest even
// (NaN to a quiet NaN), as c10's conversions and the vector units' do. The
// kernels depend on no torch type.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pln::cpu {

struct bfloat16 {
  uint16_t bits;
};
struct float16 {
  uint16_t bits;
};

template <typename S>
inline constexpr bool kHalfType = std::is_same_v<S, bfloat16> || std::is_same_v<S, float16>;

/// The type a stored value is computed in: float for the 16-bit floats.
template <typename S>
using compute_t = std::conditional_t<kHalfType<S>, float, S>;

namespace storage_detail {
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace storage_detail

inline float widen(float v) { return v; }
inline double widen(double v) { return v; }
inline float widen(bfloat16 v) { return storage_detail::float_of(uint32_t(v.bits) << 16); }

// IEEE half to float, exactly (normal numbers by rescaling the exponent,
// subnormals through a magic-number subtraction): the FP16 library's
// fp16_ieee_to_fp32_value, which c10::Half uses.
inline float widen(float16 v) {
  using storage_detail::bits_of;
  using storage_detail::float_of;
  const uint32_t w = uint32_t(v.bits) << 16, sign = w & 0x80000000u, two_w = w + w;
  const float normalised = float_of((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float subnormal = float_of((two_w >> 17) | (126u << 23)) - 0.5f;
  return float_of(sign | (two_w < (1u << 27) ? bits_of(subnormal) : bits_of(normalised)));
}

template <typename S>
S narrow(compute_t<S> v);

template <>
inline float narrow<float>(float v) {
  return v;
}
template <>
inline double narrow<double>(double v) {
  return v;
}
// Round to nearest even on the upper 16 bits.
template <>
inline bfloat16 narrow<bfloat16>(float v) {
  if (std::isnan(v)) return {0x7FC0};
  const uint32_t u = storage_detail::bits_of(v);
  return {static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}
// Float to IEEE half, rounded to nearest even by float arithmetic (the FP16
// library's fp16_ieee_from_fp32_value, which c10::Half uses): scaling by 2^112
// then 2^-110 rounds the mantissa at the half's precision, overflow goes to
// infinity, subnormals come out exact.
template <>
inline float16 narrow<float16>(float v) {
  using storage_detail::bits_of;
  using storage_detail::float_of;
  float base = (std::fabs(v) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = bits_of(v), shl1_w = w + w, sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return {static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign))};
}

}  // namespace pln::cpu
