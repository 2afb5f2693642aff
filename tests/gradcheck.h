#pragma once
// Finite-difference checks of autograd gradients (LibTorch has no gradcheck):
// the gradient of sum(f(inputs) * v) for a random v is compared, entry by
// entry, with central differences. gradgradcheck applies the same test to
// the first-order gradients built with create_graph.

#include <torch/torch.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace pln::test {

using Fn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

struct CheckResult {
  bool ok = true;
  std::string message;
};

// A 1-D view of a dense tensor's elements in memory order.
inline torch::Tensor memory_order(const torch::Tensor& t) {
  return t.as_strided({t.numel()}, {1}, t.storage_offset());
}

inline CheckResult gradcheck(const Fn& f, const std::vector<torch::Tensor>& inputs,
                             double h = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  CheckResult result;
  const torch::Tensor out0 = f(inputs);
  const torch::Tensor v = torch::randn_like(out0);
  std::vector<torch::Tensor> wrt;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) wrt.push_back(t);
  const auto analytic = torch::autograd::grad({(out0 * v).sum()}, wrt, {}, false, false, true);
  for (size_t k = 0; k < wrt.size(); ++k) {
    // Walk the elements in memory order, so dense non-contiguous inputs
    // (channels-last) are perturbed in place; the gradient is laid out alike.
    torch::Tensor flat = memory_order(wrt[k]);
    torch::Tensor grad_like = torch::zeros_like(wrt[k]);
    if (analytic[k].defined()) grad_like.copy_(analytic[k]);
    const torch::Tensor grad = memory_order(grad_like);
    for (int64_t i = 0; i < flat.numel(); ++i) {
      double orig;
      {
        torch::NoGradGuard guard;
        orig = flat[i].item<double>();
        flat[i] = orig + h;
      }
      const double plus = (f(inputs) * v).sum().item<double>();
      {
        torch::NoGradGuard guard;
        flat[i] = orig - h;
      }
      const double minus = (f(inputs) * v).sum().item<double>();
      {
        torch::NoGradGuard guard;
        flat[i] = orig;
      }
      const double numeric = (plus - minus) / (2 * h);
      const double got = grad[i].item<double>();
      if (std::abs(numeric - got) > atol + rtol * std::abs(numeric)) {
        std::ostringstream os;
        os << "input " << k << " element " << i << ": autograd " << got << " vs numeric "
           << numeric;
        return {false, os.str()};
      }
    }
  }
  return result;
}

inline CheckResult gradgradcheck(const Fn& f, const std::vector<torch::Tensor>& inputs,
                                 double h = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  const torch::Tensor v = torch::randn_like(f(inputs));
  const Fn first_order = [&](const std::vector<torch::Tensor>& in) {
    std::vector<torch::Tensor> wrt;
    for (const auto& t : in)
      if (t.defined() && t.requires_grad()) wrt.push_back(t);
    const auto grads =
        torch::autograd::grad({(f(in) * v).sum()}, wrt, {}, true, /*create_graph=*/true, true);
    std::vector<torch::Tensor> flat;
    for (size_t k = 0; k < grads.size(); ++k)
      flat.push_back(grads[k].defined() ? grads[k].reshape(-1) : torch::zeros_like(wrt[k]).reshape(-1));
    return torch::cat(flat);
  };
  return gradcheck(first_order, inputs, h, atol, rtol);
}

}  // namespace pln::test
