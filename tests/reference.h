#pragma once
// An independent, deliberately plain formulation of the operator for the tests:
// the original Python module's steps (permute, reshape to [-1, groups, g],
// mean, |x|^p, root, reshape back) written with ATen ops, and a scalar loop
// version for forward values.

#include <pln/pln.h>
#include <pln/testing.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace pln {
inline void PrintTo(Layout layout, std::ostream* os) { *os << to_string(layout); }
}  // namespace pln

namespace pln::test {

/// max |got - want| / max |want| (or the absolute error where want is all 0).
inline double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return (got.to(torch::kDouble) - want).abs().max().item<double>() / (scale > 0 ? scale : 1.0);
}

inline torch::Tensor reference(const torch::Tensor& x, int64_t C, int64_t g, Layout layout,
                               bool centering, double eps, double p,
                               const torch::Tensor& weight = {}, const torch::Tensor& bias = {}) {
  torch::Tensor t = x;
  if (layout == Layout::kNCHW) t = t.permute({0, 2, 3, 1});
  if (layout == Layout::kNCL) t = t.permute({0, 2, 1});
  const auto size = t.sizes().vec();
  t = t.reshape({-1, C / g, g});
  if (centering) t = t - t.mean(2, true);
  const torch::Tensor stat = torch::mean(torch::abs(t).pow(p), 2, true);
  torch::Tensor y = (t * (1 / (stat + eps).pow(1.0 / p))).reshape(size);
  if (layout == Layout::kNCHW) y = y.permute({0, 3, 1, 2});
  if (layout == Layout::kNCL) y = y.permute({0, 2, 1});
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[layout_channel_axis(layout)] = C;
  if (weight.defined()) y = y * weight.reshape(shape);
  if (bias.defined()) y = y + bias.reshape(shape);
  return y;
}

/// Scalar loops over a [N, C, H, W] double tensor (p = 2, no affine).
inline torch::Tensor reference_loops_nchw(const torch::Tensor& x, int64_t g, bool centering,
                                          double eps) {
  const torch::Tensor xd = x.to(torch::kDouble).contiguous();
  torch::Tensor y = torch::empty_like(xd);
  auto xa = xd.accessor<double, 4>();
  auto ya = y.accessor<double, 4>();
  for (int64_t n = 0; n < xd.size(0); ++n)
    for (int64_t h = 0; h < xd.size(2); ++h)
      for (int64_t w = 0; w < xd.size(3); ++w)
        for (int64_t c0 = 0; c0 < xd.size(1); c0 += g) {
          double mu = 0, var = 0;
          if (centering) {
            for (int64_t j = 0; j < g; ++j) mu += xa[n][c0 + j][h][w];
            mu /= double(g);
          }
          for (int64_t j = 0; j < g; ++j) var += std::pow(xa[n][c0 + j][h][w] - mu, 2);
          var /= double(g);
          for (int64_t j = 0; j < g; ++j)
            ya[n][c0 + j][h][w] = (xa[n][c0 + j][h][w] - mu) / std::sqrt(var + eps);
        }
  return y;
}

/// A random input of the given logical shape for `layout`.
inline std::vector<int64_t> shape_for(Layout layout, int64_t N, int64_t C, int64_t S1, int64_t S2) {
  switch (layout) {
    case Layout::kNC: return {N, C};
    case Layout::kNTC: return {N, S1, C};
    case Layout::kNCHW: return {N, C, S1, S2};
    case Layout::kNHWC: return {N, S1, S2, C};
    case Layout::kNCL: return {N, C, S1};
  }
  return {};
}

}  // namespace pln::test
