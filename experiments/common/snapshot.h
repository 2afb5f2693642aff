#pragma once
// A copy of a module's parameters, taken before each optimiser step so that a
// run whose loss stops being finite can report the last parameters that gave
// a finite loss (the experiments' networks are small: the copy is cheap).

#include <torch/torch.h>

#include <vector>

namespace pln::exp {

class ParameterSnapshot {
 public:
  void save(const torch::nn::Module& module) {
    torch::NoGradGuard no_grad;
    const auto params = module.parameters();
    if (copies_.size() != params.size()) {
      copies_.clear();
      for (const auto& p : params) copies_.push_back(p.detach().clone());
      return;
    }
    for (size_t i = 0; i < params.size(); ++i) copies_[i].copy_(params[i]);
  }
  void restore(torch::nn::Module& module) const {
    torch::NoGradGuard no_grad;
    auto params = module.parameters();
    for (size_t i = 0; i < params.size() && i < copies_.size(); ++i) params[i].copy_(copies_[i]);
  }

 private:
  std::vector<torch::Tensor> copies_;
};

}  // namespace pln::exp
