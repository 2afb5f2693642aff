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
// registers). Group sizes 4, 8 and 16 are compile-time so the per-group loops
// unroll; others take the same code with a run-time size. With AVX2, double
// jets with g a multiple of 4 run four groups side by side, one per lane
// (4 x 4 transposes on load and store), so every per-group sum is a vertical
// add; with AVX-512, eight groups first, then four.

#include "cpu/jet_kernels.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

template <int64_t G>
struct Size {
  static constexpr int64_t get(int64_t) { return G; }
};
template <>
struct Size<0> {
  static int64_t get(int64_t g) { return g; }
};

// One group's worth of values (V: double, or four groups' in Vec4 lanes): on
// the stack for compile-time sizes.
template <int64_t G, typename V>
struct Buffer {
  explicit Buffer(int64_t) {}
  V values[G];
  V* data() { return values; }
};
template <typename V>
struct Buffer<0, V> {
  explicit Buffer(int64_t g) : values(static_cast<size_t>(g)) {}
  std::vector<V> values;
  V* data() { return values.data(); }
};

inline double vsqrt(double x) { return std::sqrt(x); }

#if PLN_HAVE_AVX2
// Four (__m256d) or, with AVX-512, eight (__m512d) double groups side by
// side, one per lane: forward_block and backward_block with V = Vec4 or Vec8
// run the same lines as their scalar twins with V = double (ScalarIO); the
// transposes of LaneIO and LaneIO8 are the only vector-only code. GCC and
// Clang define + - * / on these register types and broadcast a scalar operand.
template <int N>
struct Register;
template <>
struct Register<4> {
  using type = __m256d;
};
template <int N>
struct Lanes {
  using R = typename Register<N>::type;
  R v;
  Lanes() = default;
  Lanes(double d) : v(R{} + d) {}  // NOLINT: scalars broadcast implicitly
  explicit Lanes(R x) : v(x) {}
};
template <int N>
inline Lanes<N> operator+(Lanes<N> a, Lanes<N> b) { return Lanes<N>(a.v + b.v); }
template <int N>
inline Lanes<N> operator-(Lanes<N> a, Lanes<N> b) { return Lanes<N>(a.v - b.v); }
template <int N>
inline Lanes<N> operator*(Lanes<N> a, Lanes<N> b) { return Lanes<N>(a.v * b.v); }
template <int N>
inline Lanes<N> operator/(Lanes<N> a, Lanes<N> b) { return Lanes<N>(a.v / b.v); }

using Vec4 = Lanes<4>;
inline Vec4 vsqrt(Vec4 x) { return Vec4(_mm256_sqrt_pd(x.v)); }

// Rows r0..r3 (four groups' 4-element chunks) <-> lanes (element i of every group).
inline void transpose4(__m256d& r0, __m256d& r1, __m256d& r2, __m256d& r3) {
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  r0 = _mm256_permute2f128_pd(t0, t2, 0x20);
  r1 = _mm256_permute2f128_pd(t1, t3, 0x20);
  r2 = _mm256_permute2f128_pd(t0, t2, 0x31);
  r3 = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// Four consecutive groups of G doubles starting at p, lane j = group j.
template <int64_t G>
struct LaneIO {
  using V = Vec4;
  static void load(const double* p, Vec4* out) {
    for (int64_t k = 0; k < G; k += 4) {
      __m256d r0 = _mm256_loadu_pd(p + k), r1 = _mm256_loadu_pd(p + G + k),
              r2 = _mm256_loadu_pd(p + 2 * G + k), r3 = _mm256_loadu_pd(p + 3 * G + k);
      transpose4(r0, r1, r2, r3);
      out[k] = Vec4(r0);
      out[k + 1] = Vec4(r1);
      out[k + 2] = Vec4(r2);
      out[k + 3] = Vec4(r3);
    }
  }
  static void store(const Vec4* in, double* p) {
    for (int64_t k = 0; k < G; k += 4) {
      __m256d r0 = in[k].v, r1 = in[k + 1].v, r2 = in[k + 2].v, r3 = in[k + 3].v;
      transpose4(r0, r1, r2, r3);
      _mm256_storeu_pd(p + k, r0);
      _mm256_storeu_pd(p + G + k, r1);
      _mm256_storeu_pd(p + 2 * G + k, r2);
      _mm256_storeu_pd(p + 3 * G + k, r3);
    }
  }
};
#endif

#if PLN_HAVE_AVX512
template <>
struct Register<8> {
  using type = __m512d;
};
using Vec8 = Lanes<8>;
inline Vec8 vsqrt(Vec8 x) { return Vec8(_mm512_sqrt_pd(x.v)); }

// Eight consecutive groups of G doubles starting at p, one per lane. Chunk k
// of groups 2j and 2j + 1 is row j (a0..a3 b0..b3, c.. d.., e.. f.., g.. h..);
// two rounds of shuffles make lane vector i hold element k + i of every group,
// in the lane order a c b d e g f h (the same for every i, so per-lane work
// needs no other order). store() undoes it.
template <int64_t G>
struct LaneIO8 {
  using V = Vec8;
  static __m512d row(const double* p, int64_t k) {
    if constexpr (G == 4) return _mm512_loadu_pd(p);
    return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(p + k)), _mm256_loadu_pd(p + G + k), 1);
  }
  static void put_row(__m512d r, double* p, int64_t k) {
    if constexpr (G == 4) {
      _mm512_storeu_pd(p, r);
    } else {
      _mm256_storeu_pd(p + k, _mm512_castpd512_pd256(r));
      _mm256_storeu_pd(p + G + k, _mm512_extractf64x4_pd(r, 1));
    }
  }
  static void load(const double* p, Vec8* out) {
    for (int64_t k = 0; k < G; k += 4) {
      const __m512d r0 = row(p, k), r1 = row(p + 2 * G, k), r2 = row(p + 4 * G, k), r3 = row(p + 6 * G, k);
      const __m512d t0 = _mm512_unpacklo_pd(r0, r1), t1 = _mm512_unpackhi_pd(r0, r1);
      const __m512d t2 = _mm512_unpacklo_pd(r2, r3), t3 = _mm512_unpackhi_pd(r2, r3);
      out[k] = Vec8(_mm512_shuffle_f64x2(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)));
      out[k + 1] = Vec8(_mm512_shuffle_f64x2(t1, t3, _MM_SHUFFLE(2, 0, 2, 0)));
      out[k + 2] = Vec8(_mm512_shuffle_f64x2(t0, t2, _MM_SHUFFLE(3, 1, 3, 1)));
      out[k + 3] = Vec8(_mm512_shuffle_f64x2(t1, t3, _MM_SHUFFLE(3, 1, 3, 1)));
    }
  }
  static void store(const Vec8* in, double* p) {
    const __m512i low = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i high = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (int64_t k = 0; k < G; k += 4) {
      const __m512d t0 = _mm512_permutex2var_pd(in[k].v, low, in[k + 2].v),
                    t2 = _mm512_permutex2var_pd(in[k].v, high, in[k + 2].v),
                    t1 = _mm512_permutex2var_pd(in[k + 1].v, low, in[k + 3].v),
                    t3 = _mm512_permutex2var_pd(in[k + 1].v, high, in[k + 3].v);
      put_row(_mm512_unpacklo_pd(t0, t1), p, k);
      put_row(_mm512_unpackhi_pd(t0, t1), p + 2 * G, k);
      put_row(_mm512_unpacklo_pd(t2, t3), p + 4 * G, k);
      put_row(_mm512_unpackhi_pd(t2, t3), p + 6 * G, k);
    }
  }
};
#endif

// One group of g values of type T at p, held in double.
template <typename T>
struct ScalarIO {
  int64_t g;
  void load(const T* p, double* out) const {
    for (int64_t i = 0; i < g; ++i) out[i] = static_cast<double>(p[i]);
  }
  void store(const double* in, T* p) const {
    for (int64_t i = 0; i < g; ++i) p[i] = static_cast<T>(in[i]);
  }
};

// v - mean(v), from values shifted by the group's first one: at a common
// offset much larger than the spread, v - v[0] is exact and its mean keeps
// the precision that mean(v) would round away (see src/cpu/kernels.cpp).
template <int64_t G, typename V>
inline void remove_mean(V* v, int64_t g, bool centering) {
  if (!centering) return;
  const int64_t n = Size<G>::get(g);
  const V shift = v[0];
  V mean(0.0);
  for (int64_t i = 1; i < n; ++i) {
    v[i] = v[i] - shift;
    mean = mean + v[i];
  }
  v[0] = V(0.0);
  mean = mean * V(1.0 / double(n));
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] - mean;
}

// Part `part` of the block whose value part starts at `offset`.
struct Parts {
  int64_t plane, offset, directions;
  int64_t first(int64_t k) const { return (1 + k) * plane + offset; }
  int64_t second(int64_t k) const { return (1 + directions + k) * plane + offset; }
};

template <int64_t G, typename V, typename IO, typename T>
inline void forward_block(const IO& io, const T* x, T* y, const Parts& at, int64_t g, double eps,
                          bool centering) {
  const int64_t n = Size<G>::get(g);
  Buffer<G, V> a_(n), b_(n), c_(n), o_(n);
  V *a = a_.data(), *b = b_.data(), *c = c_.data(), *o = o_.data();
  const V inv_g(1.0 / double(n));
  io.load(x + at.offset, a);
  remove_mean<G>(a, n, centering);
  V s(0.0);
  for (int64_t i = 0; i < n; ++i) s = s + a[i] * a[i];
  const V r = V(1.0) / vsqrt(s * inv_g + V(eps));
  const V r3 = r * r * r;
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * r;
  io.store(o, y + at.offset);
  for (int64_t k = 0; k < at.directions; ++k) {
    io.load(x + at.first(k), b);
    io.load(x + at.second(k), c);
    remove_mean<G>(b, n, centering);
    remove_mean<G>(c, n, centering);
    V s1(0.0), s2(0.0);
    for (int64_t i = 0; i < n; ++i) {
      s1 = s1 + a[i] * b[i];
      s2 = s2 + b[i] * b[i] + a[i] * c[i];
    }
    s1 = s1 * (V(2.0) * inv_g);
    s2 = s2 * (V(2.0) * inv_g);
    const V r1 = V(-0.5) * r3 * s1;
    const V r2 = V(0.75) * r3 * r * r * s1 * s1 - V(0.5) * r3 * s2;
    for (int64_t i = 0; i < n; ++i) o[i] = b[i] * r + a[i] * r1;
    io.store(o, y + at.first(k));
    for (int64_t i = 0; i < n; ++i) o[i] = c[i] * r + V(2.0) * b[i] * r1 + a[i] * r2;
    io.store(o, y + at.second(k));
  }
}

template <int64_t G, typename V, typename IO, typename T>
inline void backward_block(const IO& io, const T* dy, const T* x, T* dx, const Parts& at, int64_t g,
                           double eps, bool centering) {
  const int64_t n = Size<G>::get(g);
  Buffer<G, V> a_(n), b_(n), c_(n), ga_(n), gb_(n), gc_(n), y1_(n), y2_(n);
  V *a = a_.data(), *b = b_.data(), *c = c_.data(), *ga = ga_.data(), *gb = gb_.data(),
    *gc = gc_.data(), *gy1 = y1_.data(), *gy2 = y2_.data();
  const V inv_g(1.0 / double(n)), two_inv_g(2.0 / double(n));
  io.load(x + at.offset, a);
  remove_mean<G>(a, n, centering);
  V s(0.0);
  for (int64_t i = 0; i < n; ++i) s = s + a[i] * a[i];
  const V r = V(1.0) / vsqrt(s * inv_g + V(eps));
  const V rr = r * r, r3 = rr * r, r4 = rr * rr, r5 = r4 * r;
  V grad_r(0.0);  // total adjoint of r
  io.load(dy + at.offset, gy1);  // the values' gradient, borrowed buffer
  for (int64_t i = 0; i < n; ++i) {
    ga[i] = gy1[i] * r;
    grad_r = grad_r + gy1[i] * a[i];
  }
  for (int64_t k = 0; k < at.directions; ++k) {
    io.load(x + at.first(k), b);
    io.load(x + at.second(k), c);
    remove_mean<G>(b, n, centering);
    remove_mean<G>(c, n, centering);
    io.load(dy + at.first(k), gy1);
    io.load(dy + at.second(k), gy2);
    V s1(0.0), s2(0.0), g_r1(0.0), g_r2(0.0);
    for (int64_t i = 0; i < n; ++i) {
      s1 = s1 + a[i] * b[i];
      s2 = s2 + b[i] * b[i] + a[i] * c[i];
      grad_r = grad_r + gy1[i] * b[i] + gy2[i] * c[i];
      g_r1 = g_r1 + gy1[i] * a[i] + V(2.0) * gy2[i] * b[i];
      g_r2 = g_r2 + gy2[i] * a[i];
    }
    s1 = s1 * two_inv_g;
    s2 = s2 * two_inv_g;
    const V r1 = V(-0.5) * r3 * s1;
    const V r2 = V(0.75) * r5 * s1 * s1 - V(0.5) * r3 * s2;
    grad_r = grad_r + g_r1 * (V(-1.5) * rr * s1) + g_r2 * (V(3.75) * r4 * s1 * s1 - V(1.5) * rr * s2);
    const V g_s1 = V(-0.5) * r3 * g_r1 + V(1.5) * r5 * s1 * g_r2;
    const V g_s2 = V(-0.5) * r3 * g_r2;
    for (int64_t i = 0; i < n; ++i) {
      gb[i] = gy1[i] * r + V(2.0) * gy2[i] * r1 + two_inv_g * (g_s1 * a[i] + V(2.0) * g_s2 * b[i]);
      gc[i] = gy2[i] * r + two_inv_g * g_s2 * a[i];
      ga[i] = ga[i] + gy1[i] * r1 + gy2[i] * r2 + two_inv_g * (g_s1 * b[i] + g_s2 * c[i]);
    }
    remove_mean<G>(gb, n, centering);
    remove_mean<G>(gc, n, centering);
    io.store(gb, dx + at.first(k));
    io.store(gc, dx + at.second(k));
  }
  const V g_s = V(-0.5) * r3 * grad_r;
  for (int64_t i = 0; i < n; ++i) ga[i] = ga[i] + two_inv_g * g_s * a[i];
  remove_mean<G>(ga, n, centering);
  io.store(ga, dx + at.offset);
}

// Runs `lanes(offset, io)` on eight or four groups at a time from `start`
// while whole blocks fit before `stop`, where this capability has a vector
// path for them (double groups of a multiple of 4), io being their LaneIO8 or
// LaneIO; returns where the scalar loop takes over.
#if PLN_HAVE_AVX512
template <int64_t G, typename T, typename Vectors>
int64_t vector_groups(int64_t start, int64_t stop, Vectors& lanes) {
  if constexpr (std::is_same_v<T, double> && G > 0 && G % 4 == 0) {
    for (; start + 8 * G <= stop; start += 8 * G) lanes(start, LaneIO8<G>{});
    for (; start + 4 * G <= stop; start += 4 * G) lanes(start, LaneIO<G>{});
  }
  return start;
}
#elif PLN_HAVE_AVX2
template <int64_t G, typename T, typename Vectors>
int64_t vector_groups(int64_t start, int64_t stop, Vectors& lanes) {
  if constexpr (std::is_same_v<T, double> && G > 0 && G % 4 == 0) {
    for (; start + 4 * G <= stop; start += 4 * G) lanes(start, LaneIO<G>{});
  }
  return start;
}
#else
template <int64_t G, typename T, typename Vectors>
int64_t vector_groups(int64_t start, int64_t, Vectors&) {
  return start;
}
#endif

// Runs `scalar(offset)` on every group of rows [begin, end), or the vector
// path's `lanes` where vector_groups applies.
template <int64_t G, typename T, typename Vectors, typename Scalar>
void for_groups(const JetGeometry& geo, int64_t begin, int64_t end, Vectors&& lanes, Scalar&& scalar) {
  const int64_t g = Size<G>::get(geo.group), C = geo.channels;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t stop = row * C + C;
    for (int64_t start = vector_groups<G, T>(row * C, stop, lanes); start < stop; start += g) scalar(start);
  }
}

template <int64_t G, typename T>
void forward_rows(const JetGeometry& geo, const T* x, T* y, double eps, bool centering,
                  int64_t begin, int64_t end) {
  const int64_t plane = geo.rows * geo.channels, g = Size<G>::get(geo.group);
  for_groups<G, T>(
      geo, begin, end,
      [&]([[maybe_unused]] int64_t start, [[maybe_unused]] auto io) {
        if constexpr (std::is_same_v<T, double>) {
          forward_block<G, typename decltype(io)::V>(io, x, y, Parts{plane, start, geo.directions}, g, eps,
                                                     centering);
        }
      },
      [&](int64_t start) {
        forward_block<G, double>(ScalarIO<T>{g}, x, y, Parts{plane, start, geo.directions}, g, eps, centering);
      });
}

template <int64_t G, typename T>
void backward_rows(const JetGeometry& geo, const T* dy, const T* x, T* dx, double eps,
                   bool centering, int64_t begin, int64_t end) {
  const int64_t plane = geo.rows * geo.channels, g = Size<G>::get(geo.group);
  for_groups<G, T>(
      geo, begin, end,
      [&]([[maybe_unused]] int64_t start, [[maybe_unused]] auto io) {
        if constexpr (std::is_same_v<T, double>) {
          backward_block<G, typename decltype(io)::V>(io, dy, x, dx, Parts{plane, start, geo.directions}, g,
                                                      eps, centering);
        }
      },
      [&](int64_t start) {
        backward_block<G, double>(ScalarIO<T>{g}, dy, x, dx, Parts{plane, start, geo.directions}, g, eps, centering);
      });
}

template <typename Fn>
void for_rows(const JetGeometry& g, Fn&& fn) {
  // Rows of wide jets are independent; keep a few thousand values per task.
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.channels * g.parts()));
  at::parallel_for(0, g.rows, grain, fn);
}

template <typename T>
void forward_impl(const JetGeometry& g, const T* x, T* y, double eps, bool centering) {
  for_rows(g, [&](int64_t b, int64_t e) {
    switch (g.group) {
      case 4: return forward_rows<4>(g, x, y, eps, centering, b, e);
      case 8: return forward_rows<8>(g, x, y, eps, centering, b, e);
      case 16: return forward_rows<16>(g, x, y, eps, centering, b, e);
      default: return forward_rows<0>(g, x, y, eps, centering, b, e);
    }
  });
}

template <typename T>
void backward_impl(const JetGeometry& g, const T* dy, const T* x, T* dx, double eps, bool centering) {
  for_rows(g, [&](int64_t b, int64_t e) {
    switch (g.group) {
      case 4: return backward_rows<4>(g, dy, x, dx, eps, centering, b, e);
      case 8: return backward_rows<8>(g, dy, x, dx, eps, centering, b, e);
      case 16: return backward_rows<16>(g, dy, x, dx, eps, centering, b, e);
      default: return backward_rows<0>(g, dy, x, dx, eps, centering, b, e);
    }
  });
}

}  // namespace

void jet_forward(const JetGeometry& g, const float* x, float* y, double eps, bool centering) {
  forward_impl(g, x, y, eps, centering);
}
void jet_forward(const JetGeometry& g, const double* x, double* y, double eps, bool centering) {
  forward_impl(g, x, y, eps, centering);
}
void jet_backward(const JetGeometry& g, const float* dy, const float* x, float* dx, double eps,
                  bool centering) {
  backward_impl(g, dy, x, dx, eps, centering);
}
void jet_backward(const JetGeometry& g, const double* dy, const double* x, double* dx, double eps,
                  bool centering) {
  backward_impl(g, dy, x, dx, eps, centering);
}

}  // namespace pln::cpu::PLN_CPU_NS
