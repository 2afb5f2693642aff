#pragma once
// The vector vocabulary every CPU kernel is written against, in the manner of
// ATen's vec::Vectorized: one register of T as a type with static operations.
// ScalarVec<T> is one lane and compiles everywhere; Avx2Vec<T>, Avx512Vec<T>
// (vec_x86.h) and NeonVec<T> (vec_neon.h) exist in the compilations that
// target them. The kernels are templates over a vocabulary type W and a
// storage type S (cpu/storage.h), instantiated once per capability
// (cpu/capability.h); no kernel holds an intrinsic or an #if.
//
// Every type offers:
//   Value, V, kLanes            the compute type, the register, its lanes
//   load(const S*), store(S*, v), stream(S*, v)
//                               kLanes values, unaligned; S is Value, or for
//                               float bfloat16 and float16, widened on load
//                               and rounded to nearest even on store. stream
//                               writes around the cache (p aligned to the
//                               stored register's bytes) where kStreams, and
//                               stream_fence() orders those stores
//   set1(s), zero()
//   add, sub, mul, div, sqrt, min, max
//   fmadd(a, b, c) = a b + c, fmsub(a, b, c) = a b - c, fnmadd(a, b, c) = c - a b,
//                               each rounded once
//   round(v)                    to the nearest integer, ties to even
//   ldexp(v, n)                 v 2^n for integral n, v and the result normal
//   sum(v)                      the lanes' total, added in pairs
//   lane_sums(v[kLanes])        (where a type has it, with kLaneSums) lane l:
//                               sum(v[l]), bit for bit
//   accumulate(double* lanes, v): lanes[l] += v[l], widened to double
//   Wide, wide_zero(), widen_add(acc, v), wide_sum(acc): a double register
//                               that sums v's lanes in pairs, and its total
// and, where kLanes > 1, the transpositions the kernels across groups use
// (the double types also load and store float, widened and rounded):
//   zip_lo(a, b), zip_hi(a, b)  lanes interleaved within each 128-bit half
//                               (x86's unpack; NEON's zip1/zip2)
//   finish_transpose_sum(q)     see transpose_sum below
//   transpose(r[kLanes])        in place: lane l of r[j] <-> lane j of r[l]
//   kGroupMultiple              the group sizes groups_in/groups_out (below)
//                               take are its multiples (0: none)
// Avx2Vec<float> adds the groups of 4 (quads_*), Avx512Vec<float> the
// blocks of sixteen groups of 8 (octet_*): see there.
//
// Written once over these names: for_each_register, exp, transpose_sum,
// transpose_sum3, groups_in/groups_out (below).
//
// Arithmetic is never contracted behind the kernels' backs: the kernel
// objects compile with -ffp-contract=off, so a result's bits are fixed by
// its own code (every fused multiply-add is a named fmadd), whatever is
// compiled and inlined beside it.

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/capability.h"
#include "cpu/storage.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Whether this compilation's scalar code has a fused multiply-add instruction
// (std::fma is then one instruction; without it, a library call).
#if defined(__FMA__) || defined(__aarch64__)
constexpr bool kScalarFma = true;
#else
constexpr bool kScalarFma = false;
#endif

template <typename T>
struct ScalarVec {
  using Value = T;
  using V = T;
  static constexpr int kLanes = 1;
  static constexpr int kGroupMultiple = 1;
  static constexpr bool kStreams = false;
  template <typename S>
  static V load(const S* p) {
    return widen(*p);
  }
  template <typename S>
  static void store(S* p, V v) {
    *p = narrow<S>(v);
  }
  template <typename S>
  static void stream(S* p, V v) {
    store(p, v);
  }
  static void stream_fence() {}
  static V set1(T s) { return s; }
  static V zero() { return T(0); }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V sqrt(V a) { return std::sqrt(a); }
  static V fmadd(V a, V b, V c) {
    if constexpr (kScalarFma) return std::fma(a, b, c);
    return a * b + c;
  }
  static V fmsub(V a, V b, V c) {
    if constexpr (kScalarFma) return std::fma(a, b, -c);
    return a * b - c;
  }
  static V fnmadd(V a, V b, V c) {
    if constexpr (kScalarFma) return std::fma(-a, b, c);
    return c - a * b;
  }
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
  static void transpose(V*) {}
};

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS

#include "cpu/kernels/vec_neon.h"
#include "cpu/kernels/vec_x86.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// The widest vector type of this compilation (the kernels within a group),
// and the one of the small-group kernels (several groups a register, or the
// positions of NCHW): 256 bits with AVX-512 too, as the wider transposes
// cost more shuffles than the lanes they add save (the AVX-512 kernels of
// groups of 8 are a block kernel of their own, octets.h).
#if PLN_HAVE_AVX512
template <typename T>
using NativeVec = Avx512Vec<T>;
template <typename T>
using SmallGroupVec = Avx2Vec<T>;
#elif PLN_HAVE_AVX2
template <typename T>
using NativeVec = Avx2Vec<T>;
template <typename T>
using SmallGroupVec = Avx2Vec<T>;
#elif PLN_HAVE_NEON
template <typename T>
using NativeVec = NeonVec<T>;
template <typename T>
using SmallGroupVec = NeonVec<T>;
#else
template <typename T>
using NativeVec = ScalarVec<T>;
template <typename T>
using SmallGroupVec = ScalarVec<T>;
#endif

template <typename W>
using value_t = typename W::Value;

// f(W, j) for the values j of [begin, end): whole registers of V, the rest
// one at a time (W = ScalarVec), the same code.
template <typename V, typename F>
inline void for_each_register(int64_t begin, int64_t end, F f) {
  int64_t j = begin;
  for (; j + V::kLanes <= end; j += V::kLanes) f(V(), j);
  for (; j < end; ++j) f(ScalarVec<typename V::Value>(), j);
}
template <typename V, typename F>
inline void for_each_register(int64_t n, F f) {
  for_each_register<V>(0, n, f);
}

// Lane l: the sum of the lanes of v[l], for l < kLanes, summed while
// transposed: at each level, lanes of two registers are interleaved and
// added (single-uop shuffles: a horizontal add is several on common cores).
template <typename W>
inline typename W::V transpose_sum(const typename W::V* v) {
  if constexpr (W::kLanes == 1) {
    return v[0];
  } else {
    typename W::V q[W::kLanes / 2];
    for (int i = 0; i < W::kLanes / 2; ++i) {
      q[i] = W::add(W::zip_lo(v[2 * i], v[2 * i + 1]), W::zip_hi(v[2 * i], v[2 * i + 1]));
    }
    return W::finish_transpose_sum(q);
  }
}

// out[i] = W::sum(v[i]) for i < n, bit for bit: kLanes registers at a time
// through W::lane_sums where W has one (sum's tree, taken for all the
// registers at once), the rest one by one.
template <typename W, typename = void>
struct HasLaneSums : std::false_type {};
template <typename W>
struct HasLaneSums<W, std::void_t<decltype(W::kLaneSums)>> : std::true_type {};

template <typename W>
inline void sums_of(const typename W::V* v, int n, typename W::Value* out) {
  int i = 0;
  if constexpr (HasLaneSums<W>::value) {
    for (; i + W::kLanes <= n; i += W::kLanes) W::store(out + i, W::lane_sums(v + i));
  }
  for (; i < n; ++i) out[i] = W::sum(v[i]);
}

// Lane l: the sums of the lanes of g[l], of d[l] and of g[l] d[l]; the first
// level of the products is shared: multiplying lane by lane commutes with
// the interleaving.
template <typename W>
inline void transpose_sum3(const typename W::V* g, const typename W::V* d, typename W::V& sum_g,
                           typename W::V& sum_d, typename W::V& sum_gd) {
  if constexpr (W::kLanes == 1) {
    sum_g = g[0], sum_d = d[0], sum_gd = W::mul(g[0], d[0]);
  } else {
    typename W::V q1[W::kLanes / 2], q2[W::kLanes / 2], q3[W::kLanes / 2];
    for (int i = 0; i < W::kLanes / 2; ++i) {
      const auto glo = W::zip_lo(g[2 * i], g[2 * i + 1]), ghi = W::zip_hi(g[2 * i], g[2 * i + 1]);
      const auto dlo = W::zip_lo(d[2 * i], d[2 * i + 1]), dhi = W::zip_hi(d[2 * i], d[2 * i + 1]);
      q1[i] = W::add(glo, ghi);
      q2[i] = W::add(dlo, dhi);
      q3[i] = W::fmadd(glo, dlo, W::mul(ghi, dhi));
    }
    sum_g = W::finish_transpose_sum(q1);
    sum_d = W::finish_transpose_sum(q2);
    sum_gd = W::finish_transpose_sum(q3);
  }
}

// kLanes consecutive groups of G values at p, one a lane: out[j] holds value
// j of every group (G a multiple of W::kGroupMultiple; lanes in an order of
// W's, the same for every j), and back. By transposes of kLanes x kLanes
// blocks, or W's own where its groups may be smaller than its lanes.
template <typename W, typename S>
inline void groups_in(const S* p, int64_t G, typename W::V* out) {
  constexpr int kL = W::kLanes;
  if constexpr (W::kGroupMultiple < kL) {
    W::groups_in(p, G, out);
  } else {
    for (int64_t k = 0; k < G; k += kL) {
      for (int l = 0; l < kL; ++l) out[k + l] = W::load(p + l * G + k);
      W::transpose(out + k);
    }
  }
}
template <typename W, typename S>
inline void groups_out(const typename W::V* in, int64_t G, S* p) {
  constexpr int kL = W::kLanes;
  if constexpr (W::kGroupMultiple < kL) {
    W::groups_out(in, G, p);
  } else {
    for (int64_t k = 0; k < G; k += kL) {
      typename W::V r[kL];
      for (int l = 0; l < kL; ++l) r[l] = in[k + l];
      W::transpose(r);
      for (int l = 0; l < kL; ++l) W::store(p + l * G + k, r[l]);
    }
  }
}

// exp(x) in every lane, within a few units of rounding: x = n ln 2 + r with
// |r| <= ln 2 / 2 (ln 2 in two parts, so that n ln 2 is exact), e^r by its
// Taylor series to r^7 (float) or r^13 (double), whose first term left out is
// below half a unit of rounding, and e^x = e^r 2^n by the exponent's bits. x
// is first clamped to where e^x and the steps to it are normal numbers
// ([-86, 88] in float, [-708, 709] in double), so e^x there is e^-86 or e^88.
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
