// Fused activation jets (the math: cpu/activation_jets.h), compiled once per
// capability with PLN_CPU_NS set to its namespace, over the vector vocabulary
// of kernels/vec.h. One sweep over the elements: each register of values z
// gives phi and its derivatives once, which every direction's parts then
// take; the backward recomputes them from z rather than saving them (a few
// dozen operations a value, against the memory traffic of two more parts).
//
// Each activation's derivatives are written in forms that keep their
// relative accuracy where the textbook ones cancel: 1 - sigmoid(z) is
// e^-z sigmoid(z), not 1 - sigmoid(z); tanh is (e^2z - 1) / (e^2z + 1) with
// e^2z - 1 computed as such (expm1), not as e^2z minus 1; tanh' is
// 4 e^2z / (e^2z + 1)^2, not 1 - tanh^2.

#include "cpu/activation_jets.h"

#include "cpu/parallel.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "cpu/capability.h"
#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Values (of every part) a task reads at least: 256 KiB of double, so that a
// task's time dwarfs the thread pool's hand-over.
constexpr int64_t kTaskValues = 32768;

template <typename W>
struct ExpAndExpm1 {
  typename W::V exp, expm1;
};

// e^x and e^x - 1 in every lane, for x where 2^round(x / ln 2) is a normal
// number (the callers clamp x). exp<W> (vec.h) gives e^x, whose - 1 cancels
// near 0; here both come from one reduction: x = n ln 2 + r, |r| <= ln 2 / 2,
// e^r - 1 = r q(r) with q(r) = sum_k r^k / (k + 1)! up to the first term
// below half a unit of rounding (r^7 / 8! in float, r^13 / 14! in double at
// |r| = ln 2 / 2), then e^x - 1 = 2^n r q + (2^n - 1) and e^x = 2^n r q + 2^n.
// For n = 0 e^x - 1 is r q itself, accurate however small x is.
template <typename W>
inline ExpAndExpm1<W> exp_and_expm1(typename W::V x) {
  using T = typename W::Value;
  constexpr bool kFloat = std::is_same_v<T, float>;
  constexpr int kTerms = kFloat ? 6 : 12;
  static constexpr auto kCoefficients = [] {  // 1 / (k + 1)!
    std::array<T, kTerms + 1> c{};
    c[0] = T(1);
    for (int k = 1; k <= kTerms; ++k) c[k] = c[k - 1] / T(k + 1);
    return c;
  }();
  const auto n = W::round(W::mul(x, W::set1(T(1.4426950408889634))));
  // ln 2 in two parts, the first with few enough digits that n ln2_hi is exact (as exp<W>).
  const T ln2_hi = kFloat ? T(0.693359375) : T(0.693147180369123816490);
  const T ln2_lo = kFloat ? T(-2.12194440e-4) : T(1.90821492927058770002e-10);
  const auto r = W::fmadd(n, W::set1(-ln2_lo), W::fmadd(n, W::set1(-ln2_hi), x));
  auto q = W::set1(kCoefficients[kTerms]);
  for (int k = kTerms - 1; k >= 0; --k) q = W::fmadd(q, r, W::set1(kCoefficients[k]));
  const auto rq = W::mul(r, q);                    // e^r - 1
  const auto p = W::ldexp(W::set1(T(1)), n);      // 2^n
  return {W::fmadd(p, rq, p), W::fmadd(p, rq, W::sub(p, W::set1(T(1))))};
}

// phi(z) and its first three derivatives (the third only where the backward asks).
template <typename W>
struct Derivatives {
  typename W::V value, d1, d2, d3;
};

// tanh(z) = u / (e + 1) with e = e^2z, u = e - 1 (as expm1); e + 1 >= 1, so
// neither the quotient nor u cancels: within 4 units of rounding of the exact
// tanh (3.74 in float, 3.67 in double, the most over 80 million values, |z|
// log-uniform over [1e-8, 1], [1e-3, 32], [0.1, 3.2] and [1, 32], either
// sign, against long double's tanhl in units of the exact value's binade;
// torch's tanh is within 1 there) and within 4 of torch's, which
// tests/test_activation_jet.cpp holds to 5 from the smallest subnormal number
// to the largest finite one (measured alike on the base and AVX2 kernels). 2z is clamped
// to +-80 (float) or +-700 (double), where e and 2^n stay normal numbers and
// tanh rounds to +-1; tanh' there is 4 e^-80 or 4 e^-700 rather than smaller.
//   tanh'   = 1 - tanh^2 = 4 e / (e + 1)^2
//   tanh''  = -2 tanh tanh'
//   tanh''' = tanh' (6 tanh^2 - 2)
struct Tanh {
  static constexpr bool kCurved = true;
  template <typename W, bool kThird>
  static Derivatives<W> at(typename W::V z) {
    using T = typename W::Value;
    const T bound = std::is_same_v<T, float> ? T(80) : T(700);
    const auto x = W::min(W::set1(bound), W::max(W::set1(-bound), W::add(z, z)));
    const auto [e, u] = exp_and_expm1<W>(x);
    const auto d = W::add(e, W::set1(T(1)));
    const auto t = W::div(u, d);
    const auto inverse = W::div(W::set1(T(1)), d);
    const auto d1 = W::mul(W::mul(W::set1(T(4)), W::mul(e, inverse)), inverse);  // 4 (e / d) / d: no overflow
    const auto d2 = W::mul(W::set1(T(-2)), W::mul(t, d1));
    const auto d3 = kThird ? W::mul(d1, W::fmadd(W::set1(T(6)), W::mul(t, t), W::set1(T(-2)))) : W::zero();
    return {t, d1, d2, d3};
  }
};

// SAT: sat(z) = z q, q = (1 + z^2)^(-1/2). z is clamped to +-2^63 (float) or
// +-2^511 (double) first, where z^2 stays finite: beyond it sat rounds to +-1
// and every derivative to 0 anyway.
//   sat'   = q^3
//   sat''  = -3 z q^5 = -3 sat q^4
//   sat''' = 15 z^2 q^7 - 3 q^5 = 3 q^5 (5 sat^2 - 1)
struct Sat {
  static constexpr bool kCurved = true;
  template <typename W, bool kThird>
  static Derivatives<W> at(typename W::V z) {
    using T = typename W::Value;
    const T bound = T(std::is_same_v<T, float> ? 0x1p63 : 0x1p511);
    const auto zc = W::min(W::set1(bound), W::max(W::set1(-bound), z));
    const auto q = W::div(W::set1(T(1)), W::sqrt(W::fmadd(zc, zc, W::set1(T(1)))));
    const auto v = W::mul(zc, q), q2 = W::mul(q, q);
    const auto d1 = W::mul(q2, q);
    const auto d2 = W::mul(W::set1(T(-3)), W::mul(v, W::mul(q2, q2)));
    const auto d3 = kThird ? W::mul(W::mul(W::set1(T(3)), W::mul(d1, q2)),
                                    W::fmadd(W::set1(T(5)), W::mul(v, v), W::set1(T(-1))))
                           : W::zero();
    return {v, d1, d2, d3};
  }
};

// relu(z) = max(z, 0), relu' = 1 where z > 0 and 0 elsewhere, relu'' = 0.
// The step from the vocabulary's min and max: max(z, 0) times 2^m twice
// reaches 1 from the smallest positive (subnormal) number (2^-149 float,
// 2^-1074 double), so min(1, that) is 1 exactly where z > 0. NaN stays NaN.
struct Relu {
  static constexpr bool kCurved = false;
  template <typename W, bool kThird>
  static Derivatives<W> at(typename W::V z) {
    using T = typename W::Value;
    const T scale = T(std::is_same_v<T, float> ? 0x1p75 : 0x1p538);
    const auto positive = W::max(W::zero(), z);
    const auto step = W::min(W::set1(T(1)), W::mul(W::mul(positive, W::set1(scale)), W::set1(scale)));
    return {positive, step, W::zero(), W::zero()};
  }
};

// The logistic s = 1 / (1 + e), e = e^-z, of z clamped to +-86 (float) or
// +-708 (double), where e and e^z are normal numbers: beyond, s is e^-86 or
// e^-708 (or 1 to rounding) rather than smaller, and z s' is taken at the
// bound, so that a huge z times a clamped s' stays near 0.
//   1 - s = e s                      (not 1 - s, which cancels where s ~ 1)
//   s'    = s (1 - s)
//   s''   = s' ((1 - s) - s)
//   s'''  = s' (1 - 6 s')            (= s' (1 - 6 s + 6 s^2))
template <typename W>
struct Logistic {
  typename W::V z, s, ds, dds, ddds;  // z clamped, s and its derivatives there
};

template <typename W>
constexpr typename W::Value kLogisticBound = std::is_same_v<typename W::Value, float> ? 86 : 708;

template <typename W, bool kThird>
inline Logistic<W> logistic(typename W::V z) {
  using T = typename W::Value;
  const auto zc = W::min(W::set1(kLogisticBound<W>), W::max(W::set1(-kLogisticBound<W>), z));
  const auto e = exp<W>(W::sub(W::zero(), zc));
  const auto s = W::div(W::set1(T(1)), W::add(W::set1(T(1)), e));
  const auto c = W::mul(e, s);
  const auto ds = W::mul(s, c);
  const auto dds = W::mul(ds, W::sub(c, s));
  const auto ddds = kThird ? W::mul(ds, W::fmadd(W::set1(T(-6)), ds, W::set1(T(1)))) : W::zero();
  return {zc, s, ds, dds, ddds};
}

struct Sigmoid {
  static constexpr bool kCurved = true;
  template <typename W, bool kThird>
  static Derivatives<W> at(typename W::V z) {
    const auto l = logistic<W, kThird>(z);
    return {l.s, l.ds, l.dds, l.ddds};
  }
};

// silu(z) = z s:  silu' = s + z s',  silu'' = 2 s' + z s'',  silu''' = 3 s'' + z s'''.
// The value takes z itself above the bound (s = 1 there) and the bound below
// it (where silu is 86 e^-86 or less in size).
struct Silu {
  static constexpr bool kCurved = true;
  template <typename W, bool kThird>
  static Derivatives<W> at(typename W::V z) {
    using T = typename W::Value;
    const auto l = logistic<W, kThird>(z);
    const auto value = W::mul(W::max(W::set1(-kLogisticBound<W>), z), l.s);
    const auto d3 = kThird ? W::fmadd(l.z, l.ddds, W::mul(W::set1(T(3)), l.dds)) : W::zero();
    return {value, W::fmadd(l.z, l.ds, l.s), W::fmadd(l.z, l.dds, W::add(l.ds, l.ds)), d3};
  }
};

template <typename Fn>
void for_element_ranges(const ActivationJetShape& s, Fn&& fn) {
  parallel_for(0, s.elements, std::max<int64_t>(1, kTaskValues / s.parts()), fn);
}

template <typename Act, typename T>
void forward_impl(const ActivationJetShape& s, const T* x, T* y) {
  const int64_t M = s.elements, D = s.directions;
  for_element_ranges(s, [&](int64_t begin, int64_t end) {
    for_each_register<NativeVec<T>>(begin, end, [&](auto w_, int64_t j) {
      using W = decltype(w_);
      const auto f = Act::template at<W, false>(W::load(x + j));
      W::store(y + j, f.value);
      for (int64_t k = 0; k < D; ++k) {
        const int64_t first = (1 + k) * M + j, second = (1 + D + k) * M + j;
        const auto a = W::load(x + first), b = W::load(x + second);
        W::store(y + first, W::mul(f.d1, a));  // phi' z'
        if constexpr (Act::kCurved) {
          W::store(y + second, W::fmadd(f.d2, W::mul(a, a), W::mul(f.d1, b)));  // phi'' z'^2 + phi' z''
        } else {
          W::store(y + second, W::mul(f.d1, b));  // phi' z''
        }
      }
    });
  });
}

template <typename Act, typename T>
void backward_impl(const ActivationJetShape& s, const T* dy, const T* x, T* dx) {
  const int64_t M = s.elements, D = s.directions;
  for_element_ranges(s, [&](int64_t begin, int64_t end) {
    for_each_register<NativeVec<T>>(begin, end, [&](auto w_, int64_t j) {
      using W = decltype(w_);
      const auto f = Act::template at<W, true>(W::load(x + j));
      auto dz = W::mul(f.d1, W::load(dy + j));  // phi' dy
      for (int64_t k = 0; k < D; ++k) {
        const int64_t first = (1 + k) * M + j, second = (1 + D + k) * M + j;
        const auto g1 = W::load(dy + first), g2 = W::load(dy + second);
        W::store(dx + second, W::mul(f.d1, g2));  // phi' dy''
        if constexpr (Act::kCurved) {
          const auto a = W::load(x + first), b = W::load(x + second);
          const auto d2_g2 = W::mul(f.d2, g2);
          W::store(dx + first, W::fmadd(f.d1, g1, W::mul(W::add(d2_g2, d2_g2), a)));  // phi' dy' + 2 phi'' z' dy''
          // + phi'' (z' dy' + z'' dy'') + phi''' z'^2 dy''
          dz = W::fmadd(f.d2, W::fmadd(a, g1, W::mul(b, g2)), dz);
          dz = W::fmadd(f.d3, W::mul(W::mul(a, a), g2), dz);
        } else {
          W::store(dx + first, W::mul(f.d1, g1));  // phi' dy'
        }
      }
      W::store(dx + j, dz);
    });
  });
}

template <typename Fn>
void with_activation(JetActivation act, Fn&& fn) {
  switch (act) {
    case JetActivation::kTanh: return fn(Tanh{});
    case JetActivation::kSat: return fn(Sat{});
    case JetActivation::kRelu: return fn(Relu{});
    case JetActivation::kSilu: return fn(Silu{});
    case JetActivation::kSigmoid: return fn(Sigmoid{});
  }
}

template <typename T>
void forward_any(JetActivation act, const ActivationJetShape& s, const T* x, T* y) {
  with_activation(act, [&](auto a) { forward_impl<decltype(a)>(s, x, y); });
}

template <typename T>
void backward_any(JetActivation act, const ActivationJetShape& s, const T* dy, const T* x, T* dx) {
  with_activation(act, [&](auto a) { backward_impl<decltype(a)>(s, dy, x, dx); });
}

}  // namespace

void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const float* x, float* y) {
  forward_any(act, s, x, y);
}
void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const double* x, double* y) {
  forward_any(act, s, x, y);
}
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const float* dy, const float* x,
                             float* dx) {
  backward_any(act, s, dy, x, dx);
}
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const double* dy, const double* x,
                             double* dx) {
  backward_any(act, s, dy, x, dx);
}

}  // namespace pln::cpu::PLN_CPU_NS
