#include "pinn/loss.h"

namespace pln::exp::pinn {

Losses training_losses(PinnNet& net, const Problem& problem, const torch::Tensor& x_interior,
                       const torch::Tensor& x_boundary, const torch::Tensor& u_boundary, double bc_weight) {
  const auto d = net->forward_jet(x_interior);
  const auto pde = problem.residual(d.laplacian(), d.value, x_interior).square().mean();
  const auto bc = (net->forward(x_boundary).squeeze(1) - u_boundary).square().mean();
  return {pde, bc, pde + bc_weight * bc};
}

}  // namespace pln::exp::pinn
