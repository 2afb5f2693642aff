// Fused gated-norm kernels (the math: cpu/gated_kernels.h), compiled once per
// capability with PLN_CPU_NS set to its namespace, as kernels.cpp is. A group
// takes three passes: the gate's sigmoid and the normalised input h into a
// scratch of the task (one read of x and z), the statistics of h (two passes
// over the scratch, large_groups.h's sums), the output; the backward one more,
// for the sums its dx needs. float16 and bfloat16 groups are widened to
// float32 into scratches of the task as they are read, and rounded as they are
// written: the float32 kernel's arithmetic, without float32 copies of the
// tensors.

#include "cpu/gated_kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/capability.h"
#include "cpu/kernels/large_groups.h"
#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

using gated::compute_t;
using gated::Shape;

// A group of n stored values as the compute type T: the values themselves, or
// widened into `scratch`.
template <typename T, typename S>
const T* widened(const S* p, int64_t n, T* scratch) {
  if constexpr (std::is_same_v<S, T>) {
    return p;
  } else {
    for (int64_t j = 0; j < n; ++j) scratch[j] = static_cast<T>(p[j]);
    return scratch;
  }
}

// Where a group of the output is computed: in place, or in `scratch` and then
// rounded into place by narrowed().
template <typename T, typename S>
T* computed_in(S* p, T* scratch) {
  if constexpr (std::is_same_v<S, T>) {
    return p;
  } else {
    return scratch;
  }
}

template <typename T, typename S>
void narrowed(const T* from, int64_t n, S* to) {
  if constexpr (!std::is_same_v<S, T>) {
    for (int64_t j = 0; j < n; ++j) to[j] = static_cast<S>(from[j]);
  }
}

// A scratch of n values where S is stored narrower than T, else none.
template <typename T, typename S>
std::vector<T> scratch(int64_t n) {
  return std::vector<T>(std::is_same_v<S, T> ? 0 : static_cast<size_t>(n));
}

// Values a forward task takes at least: 64 KiB of float32, so that a task's
// time dwarfs the thread pool's hand-over (a few microseconds).
constexpr int64_t kForwardTaskValues = 16384;
// Rows per backward task: a fixed split of the rows, so that the backward's
// per-feature sums do not depend on the thread count.
constexpr int64_t kRowsPerTask = 64;
// Rows whose dweight/dbias terms are added in T before they are widened.
constexpr int64_t kFlushRows = 16;

template <typename W>
inline typename W::V sigmoid(typename W::V z) {
  using T = typename W::Value;
  return W::div(W::set1(T(1)), W::add(W::set1(T(1)), exp<W>(W::sub(W::zero(), z))));
}

// act(z) from z and its sigmoid sg: sg itself, or SiLU's z * sg.
template <typename W>
inline typename W::V activation(const Shape& s, typename W::V z, typename W::V sg) {
  return s.sigmoid ? sg : W::mul(z, sg);
}

// act'(z): sg (1 - sg), or SiLU's sg (1 + z (1 - sg)).
template <typename W>
inline typename W::V activation_slope(const Shape& s, typename W::V z, typename W::V sg) {
  using T = typename W::Value;
  const auto one_minus = W::sub(W::set1(T(1)), sg);
  return s.sigmoid ? W::mul(sg, one_minus) : W::mul(sg, W::fmadd(z, one_minus, W::set1(T(1))));
}

// The gate's sigmoid into sg, and h = x * act(z) into h (gate before the norm).
template <typename V>
void load_gate(const Shape& s, const typename V::Value* x, const typename V::Value* z, int64_t g,
               typename V::Value* sg, typename V::Value* h) {
  for_each_register<V>(g, [&](auto w_, int64_t j) {
    using W = decltype(w_);
    const auto zj = W::load(z + j), sgj = sigmoid<W>(zj);
    W::store(sg + j, sgj);
    if (s.gate_before) W::store(h + j, W::mul(W::load(x + j), activation<W>(s, zj, sgj)));
  });
}

template <typename S, bool kCenter>
void forward_impl(const Shape& s, const S* x, const S* z, const compute_t<S>* w, const compute_t<S>* b, S* y,
                  compute_t<S>* mean, compute_t<S>* rstd) {
  using T = compute_t<S>;
  using V = NativeVec<T>;
  const int64_t C = s.channels, G = s.num_groups(), g = s.group;
  at::parallel_for(0, s.rows, std::max<int64_t>(1, kForwardTaskValues / std::max<int64_t>(C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<T> sg(static_cast<size_t>(g)), hs(static_cast<size_t>(g));
    auto xs = scratch<T, S>(g), zs = scratch<T, S>(g), ys = scratch<T, S>(g);
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t k = 0; k < G; ++k) {
        const int64_t off = row * C + k * g;
        const T *xg = widened(x + off, g, xs.data()), *zg = widened(z + off, g, zs.data());
        T* yg = computed_in(y + off, ys.data());
        load_gate<V>(s, xg, zg, g, sg.data(), hs.data());
        const T* h = s.gate_before ? hs.data() : xg;
        T shift, m, r;
        group_statistics<V, kCenter>(h, g, s.eps, shift, m, r);
        write_normalised<V, kCenter>(h, yg, 0, g, shift, m, r, w + k * g, b + k * g, nullptr, false);
        if (!s.gate_before) {
          for_each_register<V>(g, [&](auto w_, int64_t j) {
            using W = decltype(w_);
            const auto a = activation<W>(s, W::load(zg + j), W::load(sg.data() + j));
            W::store(yg + j, W::mul(W::load(yg + j), a));
          });
        }
        narrowed(yg, g, y + off);
        if (mean) mean[row * G + k] = kCenter ? shift + m : T(0), rstd[row * G + k] = r;
      }
    }
  });
}

// With n = ((h - shift) - m) * r, dt = dy (before) or dy * act(z) (after), dn = dt * w:
//   dh = r * (dn - n * mean(dn * n) - mean(dn))   (no mean(dn) without centring)
//   before: dx = dh * act(z), dz = dh * x * act'(z);  after: dx = dh, dz = dy * (n * w + b) * act'(z)
template <typename S, bool kCenter>
void backward_impl(const Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* w,
                   const compute_t<S>* b, S* dx, S* dz, double* dweight, double* dbias) {
  using T = compute_t<S>;
  using V = NativeVec<T>;
  const int64_t C = s.channels, G = s.num_groups(), g = s.group;
  const int64_t tasks = (s.rows + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(tasks, 1) * 2 * C), 0.0);
  at::parallel_for(0, tasks, 1, [&](int64_t first, int64_t last) {
    std::vector<T> sg(static_cast<size_t>(g)), hs(static_cast<size_t>(g)), rows(static_cast<size_t>(2 * C));
    auto dys = scratch<T, S>(g), xs = scratch<T, S>(g), zs = scratch<T, S>(g);
    auto dxs = scratch<T, S>(g), dzs = scratch<T, S>(g);
    for (int64_t task = first; task < last; ++task) {
      double* const task_sums = partial.data() + task * 2 * C;
      const auto flush = [&] {
        for (int64_t f = 0; f < 2 * C; ++f) task_sums[f] += static_cast<double>(rows[f]), rows[f] = T(0);
      };
      std::fill(rows.begin(), rows.end(), T(0));
      const int64_t row_end = std::min(s.rows, (task + 1) * kRowsPerTask);
      for (int64_t row = task * kRowsPerTask; row < row_end; ++row) {
        for (int64_t k = 0; k < G; ++k) {
          const int64_t off = row * C + k * g;
          const T *xg = widened(x + off, g, xs.data()), *zg = widened(z + off, g, zs.data());
          const T* dyg = widened(dy + off, g, dys.data());
          T *dxg = computed_in(dx + off, dxs.data()), *dzg = computed_in(dz + off, dzs.data());
          load_gate<V>(s, xg, zg, g, sg.data(), hs.data());
          const T* h = s.gate_before ? hs.data() : xg;
          T shift, m, r;
          group_statistics<V, kCenter>(h, g, s.eps, shift, m, r);
          const T* wk = w + k * g;
          T* dw = rows.data() + k * g;
          T* db = rows.data() + C + k * g;
          // n, dt and dn of feature j, as registers of W.
          const auto terms = [&](auto w_, int64_t j, auto& n, auto& dt, auto& dn) {
            using W = decltype(w_);
            n = W::mul(W::sub(W::sub(W::load(h + j), W::set1(shift)), W::set1(m)), W::set1(r));
            const auto dyj = W::load(dyg + j);
            dt = s.gate_before ? dyj : W::mul(dyj, activation<W>(s, W::load(zg + j), W::load(sg.data() + j)));
            dn = W::mul(dt, W::load(wk + j));
          };
          double sums[2];  // sum dn, sum dn * n
          piecewise_sums<2>(g, [&](int64_t begin, int64_t end, double (&out)[2]) {
            blocked_sums<V, 2>(begin, end, [&](auto w_, int64_t j, auto* acc) {
              using W = decltype(w_);
              typename W::V n, dt, dn;
              terms(w_, j, n, dt, dn);
              acc[0] = W::add(acc[0], dn);
              acc[1] = W::fmadd(dn, n, acc[1]);
              W::store(dw + j, W::fmadd(dt, n, W::load(dw + j)));
              W::store(db + j, W::add(dt, W::load(db + j)));
            }, out);
          }, sums);
          const T mean_dn = kCenter ? static_cast<T>(sums[0] / double(g)) : T(0);
          const T mean_dn_n = static_cast<T>(sums[1] / double(g));
          const T* bk = b + k * g;
          for_each_register<V>(g, [&](auto w_, int64_t j) {
            using W = decltype(w_);
            typename W::V n, dt, dn;
            terms(w_, j, n, dt, dn);
            const auto dh = W::mul(W::set1(r), W::sub(W::sub(dn, W::mul(n, W::set1(mean_dn_n))), W::set1(mean_dn)));
            const auto zj = W::load(zg + j), sgj = W::load(sg.data() + j);
            const auto slope = activation_slope<W>(s, zj, sgj);
            if (s.gate_before) {
              W::store(dxg + j, W::mul(dh, activation<W>(s, zj, sgj)));
              W::store(dzg + j, W::mul(W::mul(dh, W::load(xg + j)), slope));
            } else {
              W::store(dxg + j, dh);
              const auto affine = W::fmadd(n, W::load(wk + j), W::load(bk + j));
              W::store(dzg + j, W::mul(W::mul(W::load(dyg + j), affine), slope));
            }
          });
          narrowed(dxg, g, dx + off);
          narrowed(dzg, g, dz + off);
        }
        if ((row + 1 - task * kRowsPerTask) % kFlushRows == 0) flush();
      }
      flush();
    }
  });
  std::fill(dweight, dweight + C, 0.0);
  std::fill(dbias, dbias + C, 0.0);
  for (int64_t task = 0; task < tasks; ++task) {
    const double* sums = partial.data() + task * 2 * C;
    for (int64_t f = 0; f < C; ++f) dweight[f] += sums[f], dbias[f] += sums[C + f];
  }
}

template <typename S>
void forward_any(const Shape& s, const S* x, const S* z, const compute_t<S>* w, const compute_t<S>* b, S* y,
                 compute_t<S>* mean, compute_t<S>* rstd) {
  if (s.rows * s.channels == 0) return;
  s.centering ? forward_impl<S, true>(s, x, z, w, b, y, mean, rstd) : forward_impl<S, false>(s, x, z, w, b, y, mean, rstd);
}

template <typename S>
void backward_any(const Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* w, const compute_t<S>* b,
                  S* dx, S* dz, double* dweight, double* dbias) {
  s.centering ? backward_impl<S, true>(s, dy, x, z, w, b, dx, dz, dweight, dbias)
              : backward_impl<S, false>(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}

}  // namespace

void gated_forward(const Shape& s, const float* x, const float* z, const float* w, const float* b, float* y,
                   float* mean, float* rstd) {
  forward_any(s, x, z, w, b, y, mean, rstd);
}
void gated_forward(const Shape& s, const double* x, const double* z, const double* w, const double* b, double* y,
                   double* mean, double* rstd) {
  forward_any(s, x, z, w, b, y, mean, rstd);
}
void gated_backward(const Shape& s, const float* dy, const float* x, const float* z, const float* w, const float* b,
                    float* dx, float* dz, double* dweight, double* dbias) {
  backward_any(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}
void gated_backward(const Shape& s, const double* dy, const double* x, const double* z, const double* w,
                    const double* b, double* dx, double* dz, double* dweight, double* dbias) {
  backward_any(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}
void gated_forward(const Shape& s, const c10::Half* x, const c10::Half* z, const float* w, const float* b,
                   c10::Half* y, float* mean, float* rstd) {
  forward_any(s, x, z, w, b, y, mean, rstd);
}
void gated_forward(const Shape& s, const c10::BFloat16* x, const c10::BFloat16* z, const float* w, const float* b,
                   c10::BFloat16* y, float* mean, float* rstd) {
  forward_any(s, x, z, w, b, y, mean, rstd);
}
void gated_backward(const Shape& s, const c10::Half* dy, const c10::Half* x, const c10::Half* z, const float* w,
                    const float* b, c10::Half* dx, c10::Half* dz, double* dweight, double* dbias) {
  backward_any(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}
void gated_backward(const Shape& s, const c10::BFloat16* dy, const c10::BFloat16* x, const c10::BFloat16* z,
                    const float* w, const float* b, c10::BFloat16* dx, c10::BFloat16* dz, double* dweight,
                    double* dbias) {
  backward_any(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}

}  // namespace pln::cpu::PLN_CPU_NS
