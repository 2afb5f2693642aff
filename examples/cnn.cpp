// A small CNN with Parallel LN after each convolution: groups of 8 channels,
// normalised at every pixel of an NCHW feature map (dim = 4, the default).

#include <pln/pln.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential net(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3).padding(1)),
      pln::ParallelLN(pln::ParallelLNOptions(32, 8)),
      torch::nn::AvgPool2d(2),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)),
      pln::ParallelLN(pln::ParallelLNOptions(64, 8)),
      torch::nn::AdaptiveAvgPool2d(1),
      torch::nn::Flatten(),
      torch::nn::Linear(64, 10));
  std::cout << net << "\n";

  const auto images = torch::randn({16, 3, 32, 32});
  const auto labels = torch::randint(0, 10, {16});
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  float first = 0, last = 0;
  for (int step = 0; step <= 20; ++step) {
    opt.zero_grad();
    auto loss = torch::cross_entropy_loss(net->forward(images), labels);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
    if (step % 5 == 0) std::cout << "step " << step << "  loss " << last << "\n";
  }
  // Channels-last activations are normalised without permute copies.
  const auto y = net->forward(images.contiguous(torch::MemoryFormat::ChannelsLast));
  std::cout << "channels-last logits: " << y.sizes() << "\n";
  return last < first && y.size(1) == 10 ? 0 : 1;  // the run doubles as a smoke test
}
