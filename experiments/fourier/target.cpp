#include "fourier/target.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace pln::exp::fourier {

torch::Tensor FourierTarget::operator()(const torch::Tensor& x) const {
  const auto t = x.reshape({-1}).to(torch::kFloat64);
  auto f = torch::zeros_like(t);
  for (int64_t k = 1; k <= modes(); ++k) {
    f += a[k - 1] * torch::cos(M_PI * double(k) * t) + b[k - 1] * torch::sin(M_PI * double(k) * t);
  }
  return f.to(x.scalar_type());
}

double FourierTarget::rms() const {
  double sum = 0;
  for (int64_t k = 0; k < modes(); ++k) sum += a[k] * a[k] + b[k] * b[k];
  return std::sqrt(sum / 2);
}

FourierTarget make_target(int64_t K, uint64_t seed) {
  if (K < 1) throw std::invalid_argument("fourier: K must be >= 1, got " + std::to_string(K));
  std::mt19937_64 rng(seed);
  // Box-Muller on 53-bit uniforms in (0, 1]: the same draws wherever mt19937_64 is exact.
  const auto uniform = [&] { return (double(rng() >> 11) + 1.0) * 0x1.0p-53; };
  const auto normal = [&] {
    return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
  };
  FourierTarget t;
  for (int64_t k = 0; k < K; ++k) {
    t.a.push_back(normal());
    t.b.push_back(normal());
  }
  const double scale = 1 / t.rms();
  for (int64_t k = 0; k < K; ++k) {
    t.a[k] *= scale;
    t.b[k] *= scale;
  }
  return t;
}

torch::Tensor training_points(int64_t n, torch::Dtype dtype) {
  if (n < 2) throw std::invalid_argument("fourier: n_train must be >= 2, got " + std::to_string(n));
  return torch::linspace(-1, 1, n, torch::TensorOptions(torch::kFloat64)).unsqueeze(1).to(dtype);
}

torch::Tensor test_points(int64_t n_train, torch::Dtype dtype) {
  const int64_t cells = 10 * (n_train - 1);
  const auto j = torch::arange(cells, torch::TensorOptions(torch::kFloat64));
  return (-1 + (2 * j + 1) / double(cells)).unsqueeze(1).to(dtype);
}

}  // namespace pln::exp::fourier
