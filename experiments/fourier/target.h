#pragma once
// Dense Fourier targets: f(x) = sum_{k=1..K} a_k cos(pi k x) + b_k sin(pi k x)
// on [-1, 1], every mode present, coefficients standard normal from a seed,
// the whole series scaled to unit RMS over [-1, 1].

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pln::exp::fourier {

struct FourierTarget {
  std::vector<double> a, b;  ///< cosine and sine coefficients of modes 1..K, after scaling

  int64_t modes() const { return static_cast<int64_t>(a.size()); }
  /// f at x [N] or [N, 1]; returns [N] in x's dtype.
  torch::Tensor operator()(const torch::Tensor& x) const;
  /// sqrt(mean of f^2 over [-1, 1]) = sqrt(sum (a_k^2 + b_k^2) / 2).
  double rms() const;
};

/// The target with K modes from `seed` (the same seed gives the same target on
/// every machine: the normal draws come from a fixed mt19937_64 + Box-Muller).
FourierTarget make_target(int64_t K, uint64_t seed);

/// n evenly spaced training points on [-1, 1], ends included: [n, 1].
torch::Tensor training_points(int64_t n, torch::Dtype dtype);
/// The midpoints of a grid 10x finer than the training grid: 10 (n - 1)
/// points, none shared with the training points: [10 (n - 1), 1].
torch::Tensor test_points(int64_t n_train, torch::Dtype dtype);

}  // namespace pln::exp::fourier
