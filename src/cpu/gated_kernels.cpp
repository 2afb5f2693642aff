// Fused gated-norm kernels (the math: cpu/gated_kernels.h), compiled once per
// capability with PLN_CPU_NS set to its namespace, as kernels.cpp is. A group
// takes three passes: the gate's sigmoid and the gated input h into a scratch
// of the task (one read of x and z), the statistics of h (two passes over the
// scratch, large_groups.h's sums), the output; the backward one more, for the
// sums its dx needs. float16 and bfloat16 values are read into float
// registers and rounded once as they are written: the float32 kernel's
// arithmetic, without float32 copies of the tensors.

#include "cpu/gated_kernels.h"

#include "cpu/parallel.h"

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

using gated::Shape;

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
template <typename V, typename S>
void load_gate(const Shape& s, const S* x, const S* z, int64_t g, typename V::Value* sg, typename V::Value* h) {
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
  parallel_for(0, s.rows, std::max<int64_t>(1, kForwardTaskValues / std::max<int64_t>(C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<T> sg(static_cast<size_t>(g)), hs(static_cast<size_t>(g)), out(static_cast<size_t>(g));
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t k = 0; k < G; ++k) {
        const int64_t off = row * C + k * g;
        const S *xg = x + off, *zg = z + off;
        load_gate<V>(s, xg, zg, g, sg.data(), hs.data());
        // The norm of h = x * act(z) (gate before), or of x, whose output the gate then multiplies.
        T shift, m, r;
        const auto normalise = [&](const auto* h, auto* yg) {
          group_statistics<V, kCenter>(h, g, s.eps, shift, m, r);
          write_normalised<V, kCenter>(h, yg, 0, g, shift, m, r, w + k * g, b + k * g, nullptr, false);
        };
        if (s.gate_before) {
          normalise(hs.data(), y + off);
        } else {
          normalise(xg, out.data());
          for_each_register<V>(g, [&](auto w_, int64_t j) {
            using W = decltype(w_);
            const auto a = activation<W>(s, W::load(zg + j), W::load(sg.data() + j));
            W::store(y + off + j, W::mul(W::load(out.data() + j), a));
          });
        }
        if (mean) mean[row * G + k] = kCenter ? shift + m : T(0), rstd[row * G + k] = r;
      }
    }
  });
}

// One group's backward: h is the normalised input (x * act(z) before, x
// after), dw and db the task's partial sums of the group's features.
// With n = ((h - shift) - m) * r, dt = dy (before) or dy * act(z) (after), dn = dt * w:
//   dh = r * (dn - n * mean(dn * n) - mean(dn))   (no mean(dn) without centring)
//   before: dx = dh * act(z), dz = dh * x * act'(z);  after: dx = dh, dz = dy * (n * w + b) * act'(z)
template <typename V, bool kCenter, typename H, typename S>
void backward_group(const Shape& s, const H* h, const S* xg, const S* zg, const S* dyg, const typename V::Value* sg,
                    const typename V::Value* wk, const typename V::Value* bk, S* dxg, S* dzg, typename V::Value* dw,
                    typename V::Value* db) {
  using T = typename V::Value;
  const int64_t g = s.group;
  T shift, m, r;
  group_statistics<V, kCenter>(h, g, s.eps, shift, m, r);
  // n, dt and dn of feature j, as registers of W.
  const auto terms = [&](auto w_, int64_t j, auto& n, auto& dt, auto& dn) {
    using W = decltype(w_);
    n = W::mul(W::sub(W::sub(W::load(h + j), W::set1(shift)), W::set1(m)), W::set1(r));
    const auto dyj = W::load(dyg + j);
    dt = s.gate_before ? dyj : W::mul(dyj, activation<W>(s, W::load(zg + j), W::load(sg + j)));
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
  for_each_register<V>(g, [&](auto w_, int64_t j) {
    using W = decltype(w_);
    typename W::V n, dt, dn;
    terms(w_, j, n, dt, dn);
    const auto dh = W::mul(W::set1(r), W::sub(W::sub(dn, W::mul(n, W::set1(mean_dn_n))), W::set1(mean_dn)));
    const auto zj = W::load(zg + j), sgj = W::load(sg + j);
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
}

template <typename S, bool kCenter>
void backward_impl(const Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* w,
                   const compute_t<S>* b, S* dx, S* dz, double* dweight, double* dbias) {
  using T = compute_t<S>;
  using V = NativeVec<T>;
  const int64_t C = s.channels, G = s.num_groups(), g = s.group;
  const int64_t tasks = (s.rows + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(tasks, 1) * 2 * C), 0.0);
  parallel_for(0, tasks, 1, [&](int64_t first, int64_t last) {
    std::vector<T> sg(static_cast<size_t>(g)), hs(static_cast<size_t>(g)), rows(static_cast<size_t>(2 * C));
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
          const S *xg = x + off, *zg = z + off, *dyg = dy + off;
          S *dxg = dx + off, *dzg = dz + off;
          load_gate<V>(s, xg, zg, g, sg.data(), hs.data());
          if (s.gate_before) {
            backward_group<V, kCenter>(s, hs.data(), xg, zg, dyg, sg.data(), w + k * g, b + k * g, dxg, dzg,
                                       rows.data() + k * g, rows.data() + C + k * g);
          } else {
            backward_group<V, kCenter>(s, xg, xg, zg, dyg, sg.data(), w + k * g, b + k * g, dxg, dzg,
                                       rows.data() + k * g, rows.data() + C + k * g);
          }
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

template <typename S>
void gated_forward(const Shape& s, const S* x, const S* z, const compute_t<S>* w, const compute_t<S>* b, S* y,
                   compute_t<S>* mean, compute_t<S>* rstd) {
  forward_any(s, x, z, w, b, y, mean, rstd);
}

template <typename S>
void gated_backward(const Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* w,
                    const compute_t<S>* b, S* dx, S* dz, double* dweight, double* dbias) {
  backward_any(s, dy, x, z, w, b, dx, dz, dweight, dbias);
}

#define PLN_INSTANTIATE(S)                                                                                           \
  template void gated_forward<S>(const Shape&, const S*, const S*, const compute_t<S>*, const compute_t<S>*, S*,     \
                                 compute_t<S>*, compute_t<S>*);                                                      \
  template void gated_backward<S>(const Shape&, const S*, const S*, const S*, const compute_t<S>*,                   \
                                  const compute_t<S>*, S*, S*, double*, double*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
PLN_INSTANTIATE(bfloat16)
PLN_INSTANTIATE(float16)
#undef PLN_INSTANTIATE

}  // namespace pln::cpu::PLN_CPU_NS
