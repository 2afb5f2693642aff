#include <pln/pln.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  pln::ParallelLN norm(pln::ParallelLNOptions(8, 4).dim(2));
  const auto y = norm(torch::randn({3, 8}));
  const double mean = y.reshape({3, 2, 4}).mean(-1).abs().max().item<double>();
  std::cout << norm << " max |group mean| " << mean << "\n";
  return mean < 1e-5 ? 0 : 1;
}
