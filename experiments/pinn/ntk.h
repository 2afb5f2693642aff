#pragma once
// The empirical output NTK of a network u_theta on a point set:
// Theta = J J^T with J[i] = d u(x_i) / d theta over every trainable parameter.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace pln::exp::pinn {

struct NtkStats {
  int64_t n_points = 0;
  double trace = 0, lambda_max = 0, lambda_min = 0;
  double cond = 0;             ///< lambda_max / lambda_min; +inf when lambda_min <= 0
  int64_t eff_rank_90 = 0;     ///< fewest leading eigenvalues holding 90% of the trace
  int64_t numerical_rank = 0;  ///< eigenvalues above max(lambda_max, 1) * 1e-12
  double mean_self_kernel = 0; ///< mean of Theta's diagonal
  double stable_rank = 0;      ///< trace / lambda_max
  std::vector<double> eigenvalues;  ///< descending
};

/// J [n_points, n_params] of `model`'s scalar outputs at `points` by one
/// backward pass per point.
torch::Tensor output_jacobian(torch::nn::Module& model,
                              const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                              const torch::Tensor& points);

/// The statistics of a kernel matrix (symmetric positive semi-definite).
NtkStats kernel_stats(const torch::Tensor& kernel);

}  // namespace pln::exp::pinn
