#include "demo/demo.h"

#include "common/device.h"

#include <pln/pln.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace pln::exp {

namespace {

torch::nn::Sequential make_net(const std::string& kind, int64_t width, int64_t group) {
  torch::nn::Sequential net(torch::nn::Linear(1, width));
  if (kind == "ln") {
    net->push_back(pln::ParallelLN(pln::ParallelLNOptions(width, width).dim(2)));
  } else if (kind == "pln") {
    net->push_back(pln::ParallelLN(pln::ParallelLNOptions(width, group).dim(2)));
  } else {
    net->push_back(torch::nn::Tanh());
  }
  net->push_back(torch::nn::Linear(width, 1));
  return net;
}

torch::Tensor target(const torch::Tensor& x) { return torch::cos(3 * M_PI * x); }

DemoResult train(const std::string& kind, const std::string& label, int64_t width,
                 const DemoConfig& c, const torch::Device& device) {
  torch::manual_seed(c.seed);
  auto net = make_net(kind, width, c.group);
  net->to(device);
  const auto x = torch::linspace(-1, 1, c.train_points).unsqueeze(1).to(device);
  const auto y = target(x);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(c.lr));
  const auto start = std::chrono::steady_clock::now();
  double loss_value = 0;
  for (int64_t step = 0; step < c.steps; ++step) {
    // Cosine decay from lr to lr / 100.
    const double t = c.steps > 1 ? double(step) / double(c.steps - 1) : 1.0;
    const double lr = c.lr * (0.01 + 0.99 * 0.5 * (1 + std::cos(M_PI * t)));
    for (auto& group : opt.param_groups()) {
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }
    opt.zero_grad();
    auto loss = torch::mse_loss(net->forward(x), y);
    loss.backward();
    opt.step();
    loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      throw std::runtime_error("demo: training of " + label + " (width " + std::to_string(width) +
                               ") diverged at step " + std::to_string(step) + " (loss " +
                               std::to_string(loss_value) + "); lower --lr");
    }
  }
  DemoResult r;
  r.model = label;
  r.width = width;
  r.final_loss = loss_value;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  torch::NoGradGuard guard;
  const auto xt = torch::linspace(-1, 1, c.test_points).unsqueeze(1).to(device);
  const auto yt = target(xt);
  const auto err = net->forward(xt) - yt;
  r.max_error = err.abs().max().item<double>();
  r.rel_l2 = (err.norm() / yt.norm()).item<double>();
  return r;
}

}  // namespace

void validate(const DemoConfig& c) {
  if (c.steps < 1) throw std::invalid_argument("demo: steps must be >= 1, got " + std::to_string(c.steps));
  if (c.group < 1) throw std::invalid_argument("demo: group must be >= 1, got " + std::to_string(c.group));
  if (c.widths.empty()) throw std::invalid_argument("demo: widths must name at least one width");
  for (int64_t w : c.widths) {
    if (w < 1 || w % c.group != 0) {
      throw std::invalid_argument("demo: every width must be a positive multiple of group (" +
                                  std::to_string(c.group) + "), got " + std::to_string(w));
    }
  }
  if (c.train_points < 2 || c.test_points < 2) {
    throw std::invalid_argument("demo: train_points and test_points must be >= 2");
  }
  if (!(c.lr > 0) || !std::isfinite(c.lr)) {
    throw std::invalid_argument("demo: lr must be a positive finite number, got " + std::to_string(c.lr));
  }
  (void)parse_device(c.device);
}

std::vector<DemoResult> run_demo(const DemoConfig& c,
                                 const std::function<void(const DemoResult&)>& on_done) {
  validate(c);
  const torch::Device device = parse_device(c.device);
  std::vector<DemoResult> results;
  auto add = [&](DemoResult r) {
    if (on_done) on_done(r);
    results.push_back(std::move(r));
  };
  const std::string pln_label = "PLN(" + std::to_string(c.group) + ")-Net";
  for (int64_t w : c.widths) add(train("ln", "LN-Net", w, c, device));
  for (int64_t w : c.widths) add(train("pln", pln_label, w, c, device));
  add(train("tanh", "Tanh-Net", c.widths.front(), c, device));
  return results;
}

}  // namespace pln::exp
