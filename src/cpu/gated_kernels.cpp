#include "cpu/gated_kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pln::cpu::gated {

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// act(z) and its derivative.
struct Activation {
  bool is_sigmoid;
  double value(double z) const { return is_sigmoid ? sigmoid(z) : z * sigmoid(z); }
  double slope(double z) const {
    const double s = sigmoid(z);
    return is_sigmoid ? s * (1 - s) : s * (1 + z * (1 - s));
  }
};

// One group's gate activations and normalised input (h = x * act(z) before
// the norm, x after it), computed once into `a` and `h`, and their mean (0
// without centering) and 1/std: the mean of values shifted by the first
// (exact at a common offset), then the mean square of the centred values.
template <typename T>
void load_group(const Shape& s, const Activation& act, const T* x, const T* z, double* a, double* h, double& mu,
                double& r) {
  const int64_t g = s.group;
  for (int64_t i = 0; i < g; ++i) {
    a[i] = act.value(double(z[i]));
    h[i] = s.gate_before ? double(x[i]) * a[i] : double(x[i]);
  }
  mu = 0;
  if (s.centering) {
    double sum = 0;
    for (int64_t i = 0; i < g; ++i) sum += h[i] - h[0];
    mu = h[0] + sum / double(g);
  }
  double squares = 0;
  for (int64_t i = 0; i < g; ++i) squares += (h[i] - mu) * (h[i] - mu);
  r = 1.0 / std::sqrt(squares / double(g) + s.eps);
}

// Rows per task of the backward's per-feature sums: a fixed split of the rows,
// so that the sums do not depend on the thread count.
constexpr int64_t kRowsPerTask = 64;

}  // namespace

template <typename T>
void forward(const Shape& s, const T* x, const T* z, const T* weight, const T* bias, T* y, T* mean, T* rstd) {
  const Activation act{s.sigmoid};
  const int64_t C = s.channels, G = s.num_groups(), g = s.group;
  at::parallel_for(0, s.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<double> a(static_cast<size_t>(g)), h(static_cast<size_t>(g));
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t k = 0; k < G; ++k) {
        const int64_t off = row * C + k * g;
        double mu, r;
        load_group(s, act, x + off, z + off, a.data(), h.data(), mu, r);
        if (mean) mean[row * G + k] = T(mu), rstd[row * G + k] = T(r);
        const T* w = weight + k * g;
        const T* b = bias + k * g;
        for (int64_t i = 0; i < g; ++i) {
          const double out = (h[i] - mu) * r * double(w[i]) + double(b[i]);
          y[off + i] = T(s.gate_before ? out : out * a[i]);
        }
      }
    }
  });
}

template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const T* weight, const T* bias,
              const T* /*mean*/, const T* /*rstd*/, T* dx, T* dz, double* dweight, double* dbias) {
  const Activation act{s.sigmoid};
  const int64_t C = s.channels, G = s.num_groups(), g = s.group;
  const int64_t tasks = (s.rows + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(tasks, 1) * 2 * C), 0.0);
  at::parallel_for(0, tasks, 1, [&](int64_t first, int64_t last) {
    std::vector<double> dn(static_cast<size_t>(g)), n(static_cast<size_t>(g));
    std::vector<double> a(static_cast<size_t>(g)), h(static_cast<size_t>(g));
    for (int64_t task = first; task < last; ++task) {
      double* dw = partial.data() + task * 2 * C;
      double* db = dw + C;
      const int64_t row_end = std::min(s.rows, (task + 1) * kRowsPerTask);
      for (int64_t row = task * kRowsPerTask; row < row_end; ++row) {
        for (int64_t k = 0; k < G; ++k) {
          const int64_t off = row * C + k * g;
          // The statistics again, in double: the saved float mean, subtracted from a
          // value of its own magnitude, would leave the centred values off by its rounding.
          double mu, r;
          load_group(s, act, x + off, z + off, a.data(), h.data(), mu, r);
          double mean_dn = 0, mean_dn_n = 0;
          for (int64_t i = 0; i < g; ++i) {
            const int64_t j = off + i, f = k * g + i;
            n[i] = (h[i] - mu) * r;
            // dt: the gradient reaching norm(.) * weight + bias.
            const double dt = s.gate_before ? double(dy[j]) : double(dy[j]) * a[i];
            dn[i] = dt * double(weight[f]);
            mean_dn += dn[i];
            mean_dn_n += dn[i] * n[i];
            dw[f] += dt * n[i];
            db[f] += dt;
          }
          mean_dn /= double(g);
          mean_dn_n /= double(g);
          for (int64_t i = 0; i < g; ++i) {
            const int64_t j = off + i, f = k * g + i;
            const double dh = r * (dn[i] - n[i] * mean_dn_n - (s.centering ? mean_dn : 0.0));
            const double zj = double(z[j]);
            if (s.gate_before) {
              dx[j] = T(dh * a[i]);
              dz[j] = T(dh * double(x[j]) * act.slope(zj));
            } else {
              dx[j] = T(dh);
              dz[j] = T(double(dy[j]) * (n[i] * double(weight[f]) + double(bias[f])) * act.slope(zj));
            }
          }
        }
      }
    }
  });
  std::fill(dweight, dweight + C, 0.0);
  std::fill(dbias, dbias + C, 0.0);
  for (int64_t task = 0; task < tasks; ++task) {
    const double* dw = partial.data() + task * 2 * C;
    for (int64_t f = 0; f < C; ++f) dweight[f] += dw[f], dbias[f] += dw[C + f];
  }
}

template void forward<float>(const Shape&, const float*, const float*, const float*, const float*, float*, float*,
                             float*);
template void forward<double>(const Shape&, const double*, const double*, const double*, const double*, double*,
                              double*, double*);
template void backward<float>(const Shape&, const float*, const float*, const float*, const float*, const float*,
                              const float*, const float*, float*, float*, double*, double*);
template void backward<double>(const Shape&, const double*, const double*, const double*, const double*,
                               const double*, const double*, const double*, double*, double*, double*, double*);

}  // namespace pln::cpu::gated
