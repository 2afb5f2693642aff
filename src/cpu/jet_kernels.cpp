// Parallel LN on second-order Taylor jets, forward and backward, one group at
// a time. Per group (size g) with centred value a, and per direction k
// centred first and second derivatives b_k, c_k:
//
//   s = mean(a^2), r = (s + eps)^(-1/2)
//   s1 = 2 mean(a b), s2 = 2 mean(b^2 + a c)
//   r1 = -r^3 s1 / 2, r2 = 3 r^5 s1^2 / 4 - r^3 s2 / 2
//   y = a r, y1 = b r + a r1, y2 = c r + 2 b r1 + a r2
//
// The backward is the exact reverse of these lines; statistics are recomputed
// from the input rather than saved (they cost one pass over a group already in
// registers). The arithmetic is in double for float and double jets alike.
// Written once over the vector vocabulary (kernels/vec.h): kLanes groups side
// by side, one a lane (groups_in/groups_out transpose them), so that every
// per-group sum is a vertical add, where the group size is a multiple of the
// type's kGroupMultiple; one group at a time (ScalarVec) otherwise. Group
// sizes 4, 8 and 16 are compile-time so the per-group loops unroll.

#include "cpu/jet_kernels.h"

#include "cpu/parallel.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// The vocabulary type of the jets' kernels: double registers, 256 bits wide
// with AVX-512 too where the group size is not a multiple of its lanes' four
// (JetVec below picks per group size).
using JetWide = NativeVec<double>;
using JetNarrow = SmallGroupVec<double>;

template <int64_t G>
struct Size {
  static constexpr int64_t get(int64_t) { return G; }
};
template <>
struct Size<0> {
  static int64_t get(int64_t g) { return g; }
};

// One register of W with the arithmetic operators, so that the jets'
// formulas read as they are written above (each operation rounded once).
template <typename W>
struct Reg {
  typename W::V v;
  Reg() = default;
  Reg(typename W::V r) : v(r) {}  // NOLINT: registers and, for ScalarVec, scalars
  template <typename U = typename W::V, std::enable_if_t<!std::is_same_v<U, double>, int> = 0>
  Reg(double s) : v(W::set1(s)) {}  // NOLINT: scalars broadcast implicitly
};
template <typename W>
inline Reg<W> operator+(Reg<W> a, Reg<W> b) {
  return W::add(a.v, b.v);
}
template <typename W>
inline Reg<W> operator-(Reg<W> a, Reg<W> b) {
  return W::sub(a.v, b.v);
}
template <typename W>
inline Reg<W> operator*(Reg<W> a, Reg<W> b) {
  return W::mul(a.v, b.v);
}
template <typename W>
inline Reg<W> operator/(Reg<W> a, Reg<W> b) {
  return W::div(a.v, b.v);
}
// a b + c, rounded once.
template <typename W>
inline Reg<W> fma(Reg<W> a, Reg<W> b, Reg<W> c) {
  return W::fmadd(a.v, b.v, c.v);
}
template <typename W>
inline Reg<W> sqrt(Reg<W> a) {
  return W::sqrt(a.v);
}

// A group's worth of registers: on the stack for compile-time sizes.
template <int64_t G, typename R>
struct Buffer {
  explicit Buffer(int64_t) {}
  R values[G];
  R* data() { return values; }
};
template <typename R>
struct Buffer<0, R> {
  explicit Buffer(int64_t g) : values(static_cast<size_t>(g)) {}
  std::vector<R> values;
  R* data() { return values.data(); }
};

// kLanes groups of n values (one a lane) in and out of registers.
template <typename W, typename S>
inline void load(const S* p, int64_t n, Reg<W>* out) {
  groups_in<W>(p, n, reinterpret_cast<typename W::V*>(out));
}
template <typename W, typename S>
inline void store(const Reg<W>* in, int64_t n, S* p) {
  groups_out<W>(reinterpret_cast<const typename W::V*>(in), n, p);
}

// v - mean(v), from values shifted by the group's first one: at a common
// offset much larger than the spread, v - v[0] is exact and its mean keeps
// the precision that mean(v) would round away (see src/cpu/kernels.cpp).
template <int64_t G, typename W>
inline void remove_mean(Reg<W>* v, int64_t g, bool centering) {
  if (!centering) return;
  const int64_t n = Size<G>::get(g);
  const Reg<W> shift = v[0];
  Reg<W> mean = 0.0;
  for (int64_t i = 1; i < n; ++i) {
    v[i] = v[i] - shift;
    mean = mean + v[i];
  }
  v[0] = 0.0;
  mean = mean * Reg<W>(1.0 / double(n));
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] - mean;
}

// Part `part` of the block whose value part starts at `offset`.
struct Parts {
  int64_t plane, offset, directions;
  int64_t first(int64_t k) const { return (1 + k) * plane + offset; }
  int64_t second(int64_t k) const { return (1 + directions + k) * plane + offset; }
};

template <int64_t G, typename W, typename S>
inline void forward_block(const S* x, S* y, const Parts& at, int64_t g, double eps, bool centering) {
  using R = Reg<W>;
  const int64_t n = Size<G>::get(g);
  Buffer<G, R> a_(n), b_(n), c_(n), o_(n);
  R *a = a_.data(), *b = b_.data(), *c = c_.data(), *o = o_.data();
  const R inv_g(1.0 / double(n));
  load(x + at.offset, n, a);
  remove_mean<G>(a, n, centering);
  R s = 0.0;
  for (int64_t i = 0; i < n; ++i) s = fma(a[i], a[i], s);
  const R r = R(1.0) / sqrt(fma(s, inv_g, R(eps)));
  const R r3 = r * r * r;
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * r;
  store(o, n, y + at.offset);
  for (int64_t k = 0; k < at.directions; ++k) {
    load(x + at.first(k), n, b);
    load(x + at.second(k), n, c);
    remove_mean<G>(b, n, centering);
    remove_mean<G>(c, n, centering);
    R s1 = 0.0, s2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      s1 = fma(a[i], b[i], s1);
      s2 = fma(a[i], c[i], fma(b[i], b[i], s2));
    }
    s1 = s1 * (R(2.0) * inv_g);
    s2 = s2 * (R(2.0) * inv_g);
    const R r1 = R(-0.5) * r3 * s1;
    const R r2 = R(0.75) * r3 * r * r * s1 * s1 - R(0.5) * r3 * s2;
    for (int64_t i = 0; i < n; ++i) o[i] = fma(a[i], r1, b[i] * r);
    store(o, n, y + at.first(k));
    for (int64_t i = 0; i < n; ++i) o[i] = fma(a[i], r2, fma(R(2.0) * b[i], r1, c[i] * r));
    store(o, n, y + at.second(k));
  }
}

template <int64_t G, typename W, typename S>
inline void backward_block(const S* dy, const S* x, S* dx, const Parts& at, int64_t g, double eps, bool centering) {
  using R = Reg<W>;
  const int64_t n = Size<G>::get(g);
  Buffer<G, R> a_(n), b_(n), c_(n), ga_(n), gb_(n), gc_(n), y1_(n), y2_(n);
  R *a = a_.data(), *b = b_.data(), *c = c_.data(), *ga = ga_.data(), *gb = gb_.data(), *gc = gc_.data(),
    *gy1 = y1_.data(), *gy2 = y2_.data();
  const R inv_g(1.0 / double(n)), two_inv_g(2.0 / double(n));
  load(x + at.offset, n, a);
  remove_mean<G>(a, n, centering);
  R s = 0.0;
  for (int64_t i = 0; i < n; ++i) s = fma(a[i], a[i], s);
  const R r = R(1.0) / sqrt(fma(s, inv_g, R(eps)));
  const R rr = r * r, r3 = rr * r, r4 = rr * rr, r5 = r4 * r;
  R grad_r = 0.0;  // total adjoint of r
  load(dy + at.offset, n, gy1);  // the values' gradient, borrowed buffer
  for (int64_t i = 0; i < n; ++i) {
    ga[i] = gy1[i] * r;
    grad_r = fma(gy1[i], a[i], grad_r);
  }
  for (int64_t k = 0; k < at.directions; ++k) {
    load(x + at.first(k), n, b);
    load(x + at.second(k), n, c);
    remove_mean<G>(b, n, centering);
    remove_mean<G>(c, n, centering);
    load(dy + at.first(k), n, gy1);
    load(dy + at.second(k), n, gy2);
    R s1 = 0.0, s2 = 0.0, g_r1 = 0.0, g_r2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      s1 = fma(a[i], b[i], s1);
      s2 = fma(a[i], c[i], fma(b[i], b[i], s2));
      grad_r = fma(gy2[i], c[i], fma(gy1[i], b[i], grad_r));
      g_r1 = fma(R(2.0) * gy2[i], b[i], fma(gy1[i], a[i], g_r1));
      g_r2 = fma(gy2[i], a[i], g_r2);
    }
    s1 = s1 * two_inv_g;
    s2 = s2 * two_inv_g;
    const R r1 = R(-0.5) * r3 * s1;
    const R r2 = R(0.75) * r5 * s1 * s1 - R(0.5) * r3 * s2;
    grad_r = grad_r + g_r1 * (R(-1.5) * rr * s1) + g_r2 * (R(3.75) * r4 * s1 * s1 - R(1.5) * rr * s2);
    const R g_s1 = R(-0.5) * r3 * g_r1 + R(1.5) * r5 * s1 * g_r2;
    const R g_s2 = R(-0.5) * r3 * g_r2;
    for (int64_t i = 0; i < n; ++i) {
      gb[i] = fma(gy1[i], r, fma(R(2.0) * gy2[i], r1, two_inv_g * fma(g_s1, a[i], R(2.0) * g_s2 * b[i])));
      gc[i] = fma(gy2[i], r, two_inv_g * g_s2 * a[i]);
      ga[i] = ga[i] + fma(gy1[i], r1, fma(gy2[i], r2, two_inv_g * fma(g_s1, b[i], g_s2 * c[i])));
    }
    remove_mean<G>(gb, n, centering);
    remove_mean<G>(gc, n, centering);
    store(gb, n, dx + at.first(k));
    store(gc, n, dx + at.second(k));
  }
  const R g_s = R(-0.5) * r3 * grad_r;
  for (int64_t i = 0; i < n; ++i) ga[i] = fma(two_inv_g * g_s, a[i], ga[i]);
  remove_mean<G>(ga, n, centering);
  store(ga, n, dx + at.offset);
}

// `lanes<W>(offset)` on kLanes groups at a time from `start` while whole
// blocks fit before `stop`, for the widest type whose groups_in takes groups
// of G (and then the narrower one), and `one(offset)` on the groups left:
// every group of rows [begin, end).
template <int64_t G, typename Lanes, typename One>
void for_groups(const JetGeometry& geo, int64_t begin, int64_t end, Lanes&& lanes, One&& one) {
  const int64_t g = Size<G>::get(geo.group), C = geo.channels;
  const auto in_blocks = [&](auto w_, int64_t start, int64_t stop) {
    using W = decltype(w_);
    if (W::kGroupMultiple == 0 || g % W::kGroupMultiple != 0) return start;
    for (; start + W::kLanes * g <= stop; start += W::kLanes * g) lanes(w_, start);
    return start;
  };
  for (int64_t row = begin; row < end; ++row) {
    const int64_t stop = row * C + C;
    int64_t start = in_blocks(JetWide(), row * C, stop);
    if constexpr (!std::is_same_v<JetWide, JetNarrow>) start = in_blocks(JetNarrow(), start, stop);
    for (; start < stop; start += g) one(start);
  }
}

template <int64_t G, typename S>
void forward_rows(const JetGeometry& geo, const S* x, S* y, double eps, bool centering, int64_t begin, int64_t end) {
  const int64_t plane = geo.rows * geo.channels, g = Size<G>::get(geo.group);
  for_groups<G>(
      geo, begin, end,
      [&](auto w_, int64_t start) {
        forward_block<G, decltype(w_)>(x, y, Parts{plane, start, geo.directions}, g, eps, centering);
      },
      [&](int64_t start) {
        forward_block<G, ScalarVec<double>>(x, y, Parts{plane, start, geo.directions}, g, eps, centering);
      });
}

template <int64_t G, typename S>
void backward_rows(const JetGeometry& geo, const S* dy, const S* x, S* dx, double eps, bool centering,
                   int64_t begin, int64_t end) {
  const int64_t plane = geo.rows * geo.channels, g = Size<G>::get(geo.group);
  for_groups<G>(
      geo, begin, end,
      [&](auto w_, int64_t start) {
        backward_block<G, decltype(w_)>(dy, x, dx, Parts{plane, start, geo.directions}, g, eps, centering);
      },
      [&](int64_t start) {
        backward_block<G, ScalarVec<double>>(dy, x, dx, Parts{plane, start, geo.directions}, g, eps, centering);
      });
}

// f(integral_constant<int64_t, G>) with the group size compile-time where it is 4, 8 or 16.
template <typename F>
void with_group(int64_t g, F f) {
  switch (g) {
    case 4: return f(std::integral_constant<int64_t, 4>());
    case 8: return f(std::integral_constant<int64_t, 8>());
    case 16: return f(std::integral_constant<int64_t, 16>());
    default: return f(std::integral_constant<int64_t, 0>());
  }
}

template <typename Fn>
void for_rows(const JetGeometry& g, Fn&& fn) {
  // Rows of wide jets are independent; keep a few thousand values per task.
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.channels * g.parts()));
  parallel_for(0, g.rows, grain, fn);
}

}  // namespace

template <typename S>
void jet_forward(const JetGeometry& g, const S* x, S* y, double eps, bool centering) {
  for_rows(g, [&](int64_t b, int64_t e) {
    with_group(g.group, [&](auto size) { forward_rows<decltype(size)::value>(g, x, y, eps, centering, b, e); });
  });
}

template <typename S>
void jet_backward(const JetGeometry& g, const S* dy, const S* x, S* dx, double eps, bool centering) {
  for_rows(g, [&](int64_t b, int64_t e) {
    with_group(g.group, [&](auto size) { backward_rows<decltype(size)::value>(g, dy, x, dx, eps, centering, b, e); });
  });
}

template void jet_forward<float>(const JetGeometry&, const float*, float*, double, bool);
template void jet_forward<double>(const JetGeometry&, const double*, double*, double, bool);
template void jet_backward<float>(const JetGeometry&, const float*, const float*, float*, double, bool);
template void jet_backward<double>(const JetGeometry&, const double*, const double*, double*, double, bool);

}  // namespace pln::cpu::PLN_CPU_NS
