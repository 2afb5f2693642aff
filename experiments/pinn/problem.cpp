#include "pinn/problem.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace pln::exp::pinn {

double radical_inverse2(uint64_t i) {
  double result = 0, f = 0.5;
  for (; i > 0; i >>= 1, f *= 0.5) {
    if (i & 1u) result += f;
  }
  return result;
}

Problem make_problem(const std::string& name) {
  Problem p;
  p.name = name;
  if (name == "helmholtz1d") {
    p.dim = 1;
    p.laplacian_coefficient = -1;
    p.value_coefficient = M_PI * M_PI;
  } else if (name == "helmholtz2d") {
    p.dim = 2;
    p.laplacian_coefficient = 1;
    p.value_coefficient = 17 * M_PI * M_PI;
  } else {
    throw std::invalid_argument("pinn: problem must be one of helmholtz1d|helmholtz2d, got '" + name + "'");
  }
  return p;
}

torch::Tensor Problem::exact(const torch::Tensor& x) const {
  const auto u = torch::sin(M_PI * x.select(1, 0));
  return dim == 1 ? u : u * torch::sin(4 * M_PI * x.select(1, 1));
}

torch::Tensor Problem::source(const torch::Tensor& x) const {
  if (dim == 1) return 2 * M_PI * M_PI * torch::sin(M_PI * x.select(1, 0));
  return torch::zeros({x.size(0)}, x.options());
}

torch::Tensor Problem::residual(const torch::Tensor& laplacian, const torch::Tensor& u,
                                const torch::Tensor& x) const {
  return laplacian_coefficient * laplacian + value_coefficient * u - source(x);
}

torch::Tensor Problem::interior(int64_t n, torch::Dtype dtype) const {
  if (n < 1) throw std::invalid_argument("pinn: n_interior must be >= 1, got " + std::to_string(n));
  std::vector<double> coords;
  coords.reserve(static_cast<size_t>(n * dim));
  for (int64_t i = 1; i <= n; ++i) {
    coords.push_back(-1 + 2 * double(i) / double(n + 1));
    if (dim == 2) coords.push_back(-1 + 2 * radical_inverse2(static_cast<uint64_t>(i)));
  }
  return torch::tensor(coords, torch::kFloat64).reshape({n, dim}).to(dtype);
}

torch::Tensor Problem::boundary(int64_t n, torch::Dtype dtype) const {
  if (dim == 1) {
    if (n != 2) {
      throw std::invalid_argument("pinn: helmholtz1d has exactly 2 boundary points (x = -1, 1), got n_boundary = " +
                                  std::to_string(n));
    }
    return torch::tensor({-1.0, 1.0}, torch::kFloat64).reshape({2, 1}).to(dtype);
  }
  if (n < 4) throw std::invalid_argument("pinn: helmholtz2d needs n_boundary >= 4, got " + std::to_string(n));
  std::vector<double> coords;
  for (int64_t j = 0; j < n; ++j) {
    const double t = 8.0 * double(j) / double(n);  // arc length along the perimeter
    const int side = std::min(3, static_cast<int>(t / 2));
    const double s = -1 + (t - 2 * side);
    const double xy[4][2] = {{s, -1}, {1, s}, {-s, 1}, {-1, -s}};
    coords.push_back(xy[side][0]);
    coords.push_back(xy[side][1]);
  }
  return torch::tensor(coords, torch::kFloat64).reshape({n, 2}).to(dtype);
}

torch::Tensor Problem::test_grid(int64_t per_axis, torch::Dtype dtype) const {
  if (per_axis < 2) throw std::invalid_argument("pinn: n_test must be >= 2, got " + std::to_string(per_axis));
  const auto axis = torch::linspace(-1, 1, per_axis, torch::TensorOptions(torch::kFloat64));
  torch::Tensor grid = axis.unsqueeze(1);
  if (dim == 2) {
    const auto mesh = torch::meshgrid({axis, axis}, "ij");
    grid = torch::stack({mesh[0].reshape(-1), mesh[1].reshape(-1)}, 1);
  }
  return grid.to(dtype);
}

torch::Tensor Problem::ntk_interior(torch::Dtype dtype) const {
  const int64_t per_axis = dim == 1 ? 64 : 8;
  const auto axis = torch::arange(1, per_axis + 1, torch::TensorOptions(torch::kFloat64)) * (2.0 / double(per_axis + 1)) - 1;
  torch::Tensor points = axis.unsqueeze(1);
  if (dim == 2) {
    const auto mesh = torch::meshgrid({axis, axis}, "ij");
    points = torch::stack({mesh[0].reshape(-1), mesh[1].reshape(-1)}, 1);
  }
  return points.to(dtype);
}

torch::Tensor TrainingPoints::all() const { return torch::cat({boundary, residual}); }

torch::Tensor deepxde_interval_points(int64_t n, torch::Dtype dtype) {
  if (n < 1) throw std::invalid_argument("pinn: n_interior must be >= 1, got " + std::to_string(n));
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 1; i <= n; ++i) x[static_cast<size_t>(i - 1)] = 2 * radical_inverse2(static_cast<uint64_t>(i)) - 1;
  return torch::tensor(x, torch::kFloat64).reshape({n, 1}).to(dtype);
}

torch::Tensor deepxde_interval_ends(int64_t n, uint64_t seed, torch::Dtype dtype) {
  if (n < 1) throw std::invalid_argument("pinn: n_boundary must be >= 1, got " + std::to_string(n));
  // numpy seeds its legacy generator with the seed's low 32 bits (init_genrand).
  std::mt19937 draw(static_cast<uint32_t>(seed));
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = (draw() & 1u) ? 1.0 : -1.0;
  return torch::tensor(x, torch::kFloat64).reshape({n, 1}).to(dtype);
}

TrainingPoints training_points(const Problem& problem, const std::string& scheme, int64_t n_interior,
                               int64_t n_boundary, uint64_t seed, torch::Dtype dtype) {
  if (scheme == "ours") return {problem.interior(n_interior, dtype), problem.boundary(n_boundary, dtype)};
  if (scheme != "deepxde") throw std::invalid_argument("pinn: points must be ours|deepxde, got '" + scheme + "'");
  if (problem.dim != 1) {
    throw std::invalid_argument("pinn: points=deepxde is defined for helmholtz1d only (DeepXDE's interval sampler), got " +
                                problem.name);
  }
  // Interval.random_boundary_points returns both ends for exactly two points, else draws.
  const auto boundary = n_boundary == 2 ? problem.boundary(2, dtype) : deepxde_interval_ends(n_boundary, seed, dtype);
  return {torch::cat({boundary, deepxde_interval_points(n_interior, dtype)}), boundary};
}

}  // namespace pln::exp::pinn
