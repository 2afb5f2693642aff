#include "pinn/ntk.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pln::exp::pinn {

torch::Tensor output_jacobian(torch::nn::Module& model,
                              const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                              const torch::Tensor& points) {
  std::vector<torch::Tensor> params;
  for (auto& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  const auto outputs = forward(points).reshape(-1);
  std::vector<torch::Tensor> rows;
  rows.reserve(static_cast<size_t>(outputs.size(0)));
  for (int64_t i = 0; i < outputs.size(0); ++i) {
    const auto grads = torch::autograd::grad({outputs[i]}, params, {}, /*retain_graph=*/true,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    std::vector<torch::Tensor> flat;
    for (size_t k = 0; k < grads.size(); ++k) {
      flat.push_back(grads[k].defined() ? grads[k].reshape(-1) : torch::zeros({params[k].numel()}, params[k].options()));
    }
    rows.push_back(torch::cat(flat));
  }
  return torch::stack(rows);
}

NtkStats kernel_stats(const torch::Tensor& kernel) {
  NtkStats s;
  const auto k = kernel.to(torch::kCPU, torch::kFloat64);  // eigenvalues on the host, in double
  s.n_points = k.size(0);
  const auto eig = at::linalg_eigvalsh(k, "L").flip(0).contiguous();  // descending
  s.eigenvalues.assign(eig.data_ptr<double>(), eig.data_ptr<double>() + eig.numel());
  s.trace = k.diagonal().sum().item<double>();
  s.lambda_max = s.eigenvalues.front();
  s.lambda_min = s.eigenvalues.back();
  s.cond = s.lambda_min > 0 ? s.lambda_max / s.lambda_min : std::numeric_limits<double>::infinity();
  double held = 0;
  for (double e : s.eigenvalues) {
    held += std::max(e, 0.0);
    ++s.eff_rank_90;
    if (held >= 0.9 * s.trace * (1 - 1e-12)) break;  // rounding must not add a rank
  }
  const double cutoff = std::max(s.lambda_max, 1.0) * 1e-12;
  s.numerical_rank = std::count_if(s.eigenvalues.begin(), s.eigenvalues.end(),
                                   [&](double e) { return e > cutoff; });
  s.mean_self_kernel = s.trace / double(s.n_points);
  s.stable_rank = s.lambda_max > 0 ? s.trace / s.lambda_max : 0.0;
  return s;
}

}  // namespace pln::exp::pinn
