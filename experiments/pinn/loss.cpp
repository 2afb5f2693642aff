#include "pinn/loss.h"

namespace pln::exp::pinn {

Losses training_losses(PinnNet& net, const Problem& problem, const TrainingPoints& points,
                       const torch::Tensor& u_boundary, LossWeights weights) {
  const auto d = net->forward_jet(points.residual);
  const auto pde = problem.residual(d.laplacian(), d.value, points.residual).square().mean();
  const auto bc = (net->forward(points.boundary).squeeze(1) - u_boundary).square().mean();
  return {pde, bc, weights.pde * pde + weights.bc * bc};
}

std::optional<Step> training_step(PinnNet& net, const Problem& problem, const TrainingPoints& points,
                                  const torch::Tensor& u_boundary, LossWeights weights,
                                  torch::optim::Optimizer& optimizer, DivergenceGuard& guard, int64_t step) {
  optimizer.zero_grad();
  Step taken{training_losses(net, problem, points, u_boundary, weights), 0.0};
  taken.loss = taken.losses.total.item<double>();
  if (!guard.check(taken.loss, step, *net)) return std::nullopt;
  taken.losses.total.backward();
  guard.keep(*net);
  optimizer.step();
  return taken;
}

}  // namespace pln::exp::pinn
