#pragma once
// The Helmholtz problems and their point sets.
//
//   helmholtz1d: -u'' + pi^2 u = 2 pi^2 sin(pi x) on [-1, 1], u(+-1) = 0,
//                exact u = sin(pi x).
//   helmholtz2d: u_xx + u_yy + 17 pi^2 u = 0 on [-1, 1]^2, u = 0 on the
//                boundary, exact u = sin(pi x) sin(4 pi y).
//
// Interior collocation points are a Hammersley set: point i = 1..n has first
// coordinate i / (n + 1) and, in 2-D, second coordinate the base-2 radical
// inverse of i, mapped to [-1, 1]; in 1-D the set is n evenly spaced interior
// points. Boundary points: both ends in 1-D; in 2-D n_boundary points evenly
// spaced along the perimeter, starting at the corner (-1, -1).

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pln::exp::pinn {

struct Problem {
  std::string name;
  int64_t dim = 1;
  double laplacian_coefficient = -1;  ///< residual = a * lap(u) + b * u - f(x)
  double value_coefficient = 0;

  torch::Tensor exact(const torch::Tensor& x) const;   ///< [N, dim] -> [N]
  torch::Tensor source(const torch::Tensor& x) const;  ///< f(x), [N]
  torch::Tensor residual(const torch::Tensor& laplacian, const torch::Tensor& u,
                         const torch::Tensor& x) const;
  torch::Tensor interior(int64_t n, torch::Dtype dtype) const;
  torch::Tensor boundary(int64_t n, torch::Dtype dtype) const;
  /// An evenly spaced grid with `per_axis` points per axis (corners included).
  torch::Tensor test_grid(int64_t per_axis, torch::Dtype dtype) const;
  /// 64 evenly spaced interior points (8 x 8 in 2-D): the NTK's interior set.
  torch::Tensor ntk_interior(torch::Dtype dtype) const;
};

/// helmholtz1d | helmholtz2d; throws std::invalid_argument otherwise.
Problem make_problem(const std::string& name);

/// Base-2 radical inverse (van der Corput) of i.
double radical_inverse2(uint64_t i);

}  // namespace pln::exp::pinn
