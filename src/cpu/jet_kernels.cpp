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
// unroll; others take the same code with a run-time size.

#include "cpu/jet_kernels.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

#ifndef PLN_CPU_NS
#error "PLN_CPU_NS must name the capability namespace"
#endif

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

// One group's worth of values: on the stack for compile-time sizes.
template <int64_t G>
struct Buffer {
  explicit Buffer(int64_t) {}
  double values[G];
  double* data() { return values; }
};
template <>
struct Buffer<0> {
  explicit Buffer(int64_t g) : values(static_cast<size_t>(g)) {}
  std::vector<double> values;
  double* data() { return values.data(); }
};

// Loads one part of a group into `out`, centred when asked.
template <int64_t G, typename T, typename A>
inline void load_centred(const T* p, int64_t g, bool centering, A* out) {
  const int64_t n = Size<G>::get(g);
  A mean = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<A>(p[i]);
    mean += out[i];
  }
  mean /= A(n);
  if (centering) {
    for (int64_t i = 0; i < n; ++i) out[i] -= mean;
  }
}

// Writes P v (P: subtract the group mean when centring) to `p`.
template <int64_t G, typename T, typename A>
inline void store_projected(const A* v, int64_t g, bool centering, T* p) {
  const int64_t n = Size<G>::get(g);
  A mean = 0;
  if (centering) {
    for (int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= A(n);
  }
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(v[i] - mean);
}

template <int64_t G, typename T>
void forward_rows(const JetGeometry& geo, const T* x, T* y, double eps, bool centering,
                  int64_t begin, int64_t end) {
  using A = double;  // groups are tiny: accumulate in double whatever the storage type
  const int64_t g = Size<G>::get(geo.group), C = geo.channels, D = geo.directions;
  const int64_t plane = geo.rows * C;
  Buffer<G> a_(g), b_(g), c_(g);
  A *a = a_.data(), *b = b_.data(), *c = c_.data();
  const A inv_g = A(1) / A(g);
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t start = row * C; start < row * C + C; start += g) {
      load_centred<G>(x + start, g, centering, a);
      A s = 0;
      for (int64_t i = 0; i < g; ++i) s += a[i] * a[i];
      const A r = A(1) / std::sqrt(s * inv_g + A(eps));
      const A r3 = r * r * r;
      for (int64_t i = 0; i < g; ++i) y[start + i] = static_cast<T>(a[i] * r);
      for (int64_t k = 0; k < D; ++k) {
        const int64_t o1 = (1 + k) * plane + start, o2 = (1 + D + k) * plane + start;
        load_centred<G>(x + o1, g, centering, b);
        load_centred<G>(x + o2, g, centering, c);
        A s1 = 0, s2 = 0;
        for (int64_t i = 0; i < g; ++i) {
          s1 += a[i] * b[i];
          s2 += b[i] * b[i] + a[i] * c[i];
        }
        s1 *= 2 * inv_g;
        s2 *= 2 * inv_g;
        const A r1 = -A(0.5) * r3 * s1;
        const A r2 = A(0.75) * r3 * r * r * s1 * s1 - A(0.5) * r3 * s2;
        for (int64_t i = 0; i < g; ++i) {
          y[o1 + i] = static_cast<T>(b[i] * r + a[i] * r1);
          y[o2 + i] = static_cast<T>(c[i] * r + 2 * b[i] * r1 + a[i] * r2);
        }
      }
    }
  }
}

template <int64_t G, typename T>
void backward_rows(const JetGeometry& geo, const T* dy, const T* x, T* dx, double eps,
                   bool centering, int64_t begin, int64_t end) {
  using A = double;
  const int64_t g = Size<G>::get(geo.group), C = geo.channels, D = geo.directions;
  const int64_t plane = geo.rows * C;
  Buffer<G> a_(g), b_(g), c_(g), ga_(g), gb_(g), gc_(g);
  A *a = a_.data(), *b = b_.data(), *c = c_.data(), *ga = ga_.data(), *gb = gb_.data(), *gc = gc_.data();
  const A inv_g = A(1) / A(g);
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t start = row * C; start < row * C + C; start += g) {
      load_centred<G>(x + start, g, centering, a);
      A s = 0;
      for (int64_t i = 0; i < g; ++i) s += a[i] * a[i];
      const A r = A(1) / std::sqrt(s * inv_g + A(eps));
      const A r2_ = r * r, r3 = r2_ * r, r4 = r2_ * r2_, r5 = r4 * r;
      A grad_r = 0;  // total adjoint of r
      const T* gy0 = dy + start;
      for (int64_t i = 0; i < g; ++i) {
        ga[i] = A(gy0[i]) * r;
        grad_r += A(gy0[i]) * a[i];
      }
      for (int64_t k = 0; k < D; ++k) {
        const int64_t o1 = (1 + k) * plane + start, o2 = (1 + D + k) * plane + start;
        load_centred<G>(x + o1, g, centering, b);
        load_centred<G>(x + o2, g, centering, c);
        const T* gy1 = dy + o1;
        const T* gy2 = dy + o2;
        A s1 = 0, s2 = 0, g_r1 = 0, g_r2 = 0;
        for (int64_t i = 0; i < g; ++i) {
          s1 += a[i] * b[i];
          s2 += b[i] * b[i] + a[i] * c[i];
          grad_r += A(gy1[i]) * b[i] + A(gy2[i]) * c[i];
          g_r1 += A(gy1[i]) * a[i] + 2 * A(gy2[i]) * b[i];
          g_r2 += A(gy2[i]) * a[i];
        }
        s1 *= 2 * inv_g;
        s2 *= 2 * inv_g;
        const A r1 = -A(0.5) * r3 * s1;
        const A r2 = A(0.75) * r5 * s1 * s1 - A(0.5) * r3 * s2;
        grad_r += g_r1 * (-A(1.5) * r2_ * s1) + g_r2 * (A(3.75) * r4 * s1 * s1 - A(1.5) * r2_ * s2);
        const A g_s1 = -A(0.5) * r3 * g_r1 + A(1.5) * r5 * s1 * g_r2;
        const A g_s2 = -A(0.5) * r3 * g_r2;
        for (int64_t i = 0; i < g; ++i) {
          const A y1 = A(gy1[i]), y2 = A(gy2[i]);
          gb[i] = y1 * r + 2 * y2 * r1 + 2 * inv_g * (g_s1 * a[i] + 2 * g_s2 * b[i]);
          gc[i] = y2 * r + 2 * inv_g * g_s2 * a[i];
          ga[i] += y1 * r1 + y2 * r2 + 2 * inv_g * (g_s1 * b[i] + g_s2 * c[i]);
        }
        store_projected<G>(gb, g, centering, dx + o1);
        store_projected<G>(gc, g, centering, dx + o2);
      }
      const A g_s = -A(0.5) * r3 * grad_r;
      for (int64_t i = 0; i < g; ++i) ga[i] += 2 * inv_g * g_s * a[i];
      store_projected<G>(ga, g, centering, dx + start);
    }
  }
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
