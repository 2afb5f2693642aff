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
//
// The authors' framework trains through DeepXDE, whose default point sets for
// an interval differ (training_points with scheme "deepxde"; docs/pinn.md
// cites the lines they follow).

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

/// The points a run trains on.
struct TrainingPoints {
  torch::Tensor residual;  ///< where the PDE residual is taken, [N, dim]
  torch::Tensor boundary;  ///< where u is held to the exact solution, [B, dim]
  /// `boundary` then `residual`: DeepXDE's training set, on which its
  /// "l2 relative error" is measured when no test set is given.
  torch::Tensor all() const;
};

/// scheme "ours": `interior(n_interior)` and `boundary(n_boundary)`.
/// scheme "deepxde" (helmholtz1d only), what `dde.data.PDE(dde.geometry.Interval(-1, 1),
/// ..., num_domain, num_boundary)` trains on with its default "Hammersley" distribution:
/// interior point i = 1..n at 2 v(i) - 1 (v: the base-2 radical inverse), in that
/// order; the boundary both ends when n_boundary = 2, else n_boundary ends drawn
/// as numpy's `np.random.seed(seed); np.random.choice([-1, 1], n)` draws them;
/// the residual is taken at the boundary points too.
/// Throws std::invalid_argument naming the scheme or count it cannot make.
TrainingPoints training_points(const Problem& problem, const std::string& scheme, int64_t n_interior,
                               int64_t n_boundary, uint64_t seed, torch::Dtype dtype);

/// DeepXDE's Hammersley points on (-1, 1): 2 v(i) - 1 for i = 1..n, [n, 1].
torch::Tensor deepxde_interval_points(int64_t n, torch::Dtype dtype);
/// n points at -1 or 1, each +1 where the next output of std::mt19937(seed) is odd
/// (numpy's legacy `np.random.choice([-1, 1], n)` after `np.random.seed(seed)`), [n, 1].
torch::Tensor deepxde_interval_ends(int64_t n, uint64_t seed, torch::Dtype dtype);

/// helmholtz1d | helmholtz2d; throws std::invalid_argument otherwise.
Problem make_problem(const std::string& name);

/// Base-2 radical inverse (van der Corput) of i.
double radical_inverse2(uint64_t i);

}  // namespace pln::exp::pinn
