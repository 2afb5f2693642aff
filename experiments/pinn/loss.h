#pragma once
// The PINN training loss: the PDE residual at the interior points (one
// Taylor-mode forward) and the boundary misfit (one plain forward). `pln pinn`
// and bench/bench_pinn_step.cpp both take their steps through it.

#include "pinn/network.h"
#include "pinn/problem.h"

#include <torch/torch.h>

namespace pln::exp::pinn {

struct Losses {
  torch::Tensor pde, bc, total;  ///< mean squared residual, boundary misfit, pde + bc_weight * bc
};

Losses training_losses(PinnNet& net, const Problem& problem, const torch::Tensor& x_interior,
                       const torch::Tensor& x_boundary, const torch::Tensor& u_boundary, double bc_weight);

}  // namespace pln::exp::pinn
