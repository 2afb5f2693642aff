#include "pinn/loss.h"

namespace pln::exp::pinn {

Losses training_losses(PinnNet& net, const Problem& problem, const torch::Tensor& x_interior,
                       const torch::Tensor& x_boundary, const torch::Tensor& u_boundary, double bc_weight) {
  const auto d = net->forward_jet(x_interior);
  const auto pde = problem.residual(d.laplacian(), d.value, x_interior).square().mean();
  const auto bc = (net->forward(x_boundary).squeeze(1) - u_boundary).square().mean();
  return {pde, bc, pde + bc_weight * bc};
}

std::optional<Step> training_step(PinnNet& net, const Problem& problem, const torch::Tensor& x_interior,
                                  const torch::Tensor& x_boundary, const torch::Tensor& u_boundary,
                                  double bc_weight, torch::optim::Optimizer& optimizer, DivergenceGuard& guard,
                                  int64_t step) {
  optimizer.zero_grad();
  Step taken{training_losses(net, problem, x_interior, x_boundary, u_boundary, bc_weight), 0.0};
  taken.loss = taken.losses.total.item<double>();
  if (!guard.check(taken.loss, step, *net)) return std::nullopt;
  taken.losses.total.backward();
  guard.keep(*net);
  optimizer.step();
  return taken;
}

}  // namespace pln::exp::pinn
