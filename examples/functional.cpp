// The functional call: groups of 4 features of [N, T, C] tokens, with and
// without centering (PLN and PLS), and PQNorm.

#include <pln/pln.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  const auto tokens = torch::randn({2, 5, 16});
  namespace F = pln::functional;

  const auto y = F::parallel_ln(tokens, pln::ParallelLNOptions(16, 4).dim(3).affine(false));
  const auto groups = y.reshape({2, 5, 4, 4});
  const float max_mean = groups.mean(-1).abs().max().item<float>();
  std::cout << "PLN: max |group mean| = " << max_mean
            << ", mean of group mean squares = " << groups.pow(2).mean(-1).mean().item<float>() << "\n";

  const auto s = F::parallel_ln(tokens, pln::ParallelLNOptions(16, 4).dim(3).centering(false));
  std::cout << "PLS: mean of group mean squares = "
            << s.reshape({2, 5, 4, 4}).pow(2).mean(-1).mean().item<float>() << "\n";

  const auto weight = torch::full({16}, 2.0), bias = torch::full({16}, 0.5);
  const auto affine = F::parallel_ln(tokens, pln::ParallelLNOptions(16, 4).dim(3), weight, bias);
  std::cout << "affine: mean " << affine.mean().item<float>() << " (bias 0.5)\n";

  const auto pq = F::pq_norm(tokens, pln::PQNormOptions(16, 4).p(1.0).q(1.0).dim(3).affine(false));
  std::cout << "PQNorm(p=1, q=1): mean |x| per group = "
            << pq.reshape({2, 5, 4, 4}).abs().mean(-1).mean().item<float>() << "\n";
  return max_mean < 1e-5 ? 0 : 1;  // the run doubles as a smoke test
}
