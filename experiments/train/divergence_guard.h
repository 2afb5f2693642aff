#pragma once
// A copy of a module's parameters, taken before each optimiser step so that a
// run whose loss stops being finite can report the last parameters that gave
// a finite loss (the experiments' networks are small: the copy is cheap).

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
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
  /// The copies (none before the first save), for a checkpoint.
  const std::vector<torch::Tensor>& copies() const { return copies_; }
  void set_copies(std::vector<torch::Tensor> copies) { copies_ = std::move(copies); }
  void restore(torch::nn::Module& module) const {
    torch::NoGradGuard no_grad;
    auto params = module.parameters();
    for (size_t i = 0; i < params.size() && i < copies_.size(); ++i) params[i].copy_(copies_[i]);
  }

 private:
  std::vector<torch::Tensor> copies_;
};

/// Stops a run whose loss stops being finite, keeping the last parameters
/// that gave a finite loss:
///
///   if (!guard.check(loss.item<double>(), step, *net)) break;
///   loss.backward();
///   guard.keep(*net);
///   optimizer.step();
class DivergenceGuard {
 public:
  explicit DivergenceGuard(std::string experiment) : experiment_(std::move(experiment)) {}
  /// True when `loss` is finite. Otherwise records `step`, puts back the
  /// parameters of the last keep() (none in this session: they stay) and
  /// prints why training stops.
  bool check(double loss, int64_t step, torch::nn::Module& module) {
    if (std::isfinite(loss)) return true;
    diverged_at_ = step;
    last_finite_.restore(module);
    fmt::print("{}: loss is {} at step {}; training stops, metrics are those of the last parameters with a "
               "finite loss\n", experiment_, loss, step);
    return false;
  }
  /// Saves the parameters whose loss was just found finite; call before each optimiser step.
  void keep(const torch::nn::Module& module) { last_finite_.save(module); }
  bool diverged() const { return diverged_at_ >= 0; }
  /// The step whose loss was not finite; -1 while none was.
  int64_t diverged_at() const { return diverged_at_; }
  /// The parameters of the last keep(): a checkpoint keeps them, so that a
  /// resumed run that diverges at once goes back to the same ones.
  ParameterSnapshot& last_finite() { return last_finite_; }

 private:
  std::string experiment_;
  ParameterSnapshot last_finite_;
  int64_t diverged_at_ = -1;
};

}  // namespace pln::exp
