// A PLN-Net: linear layers with Parallel LN between them and no activation
// function, trained for a few steps on a toy regression.

#include <pln/pln.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential net(
      torch::nn::Linear(2, 64),
      pln::ParallelLN(pln::ParallelLNOptions(64, 4).dim(2)),  // [N, C], groups of 4
      torch::nn::Linear(64, 64),
      pln::ParallelLN(pln::ParallelLNOptions(64, 4).dim(2)),
      torch::nn::Linear(64, 1));
  std::cout << net << "\n";

  const auto x = torch::rand({512, 2}) * 2 - 1;
  const auto y = torch::sin(3 * x.select(1, 0)) * torch::cos(2 * x.select(1, 1));
  torch::optim::Adam opt(net->parameters(), 1e-2);
  float first = 0, last = 0;
  for (int step = 0; step <= 300; ++step) {
    opt.zero_grad();
    auto loss = torch::mse_loss(net->forward(x).squeeze(1), y);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
    if (step % 100 == 0) std::cout << "step " << step << "  mse " << last << "\n";
  }
  return last < first / 10 ? 0 : 1;  // the run doubles as a smoke test
}
