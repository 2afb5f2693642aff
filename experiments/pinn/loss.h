#pragma once
// The PINN training loss, the PDE residual at the residual points (one
// Taylor-mode forward) and the boundary misfit (one plain forward), and one
// optimisation step on it. `pln pinn` and bench/bench_pinn_step.cpp both take
// their steps through training_step.

#include "train/divergence_guard.h"
#include "pinn/network.h"
#include "pinn/problem.h"

#include <torch/torch.h>

#include <optional>

namespace pln::exp::pinn {

struct LossWeights {
  double pde = 1, bc = 1;
};

struct Losses {
  torch::Tensor pde, bc, total;  ///< mean squared residual, boundary misfit, weights.pde * pde + weights.bc * bc
};

Losses training_losses(PinnNet& net, const Problem& problem, const TrainingPoints& points,
                       const torch::Tensor& u_boundary, LossWeights weights);

struct Step {
  Losses losses;
  double loss;  ///< losses.total as a number
};

/// Zeroes the gradients, takes the losses, then (the parameters kept by
/// `guard` first) the backward and the optimiser's step. Empty, with nothing
/// stepped, when the loss is not finite: `guard` has then put back the last
/// kept parameters and recorded `step`.
std::optional<Step> training_step(PinnNet& net, const Problem& problem, const TrainingPoints& points,
                                  const torch::Tensor& u_boundary, LossWeights weights,
                                  torch::optim::Optimizer& optimizer, DivergenceGuard& guard, int64_t step);

}  // namespace pln::exp::pinn
