#pragma once
// Modules in the style of torch::nn::LayerNorm: Options, a Cloneable Impl and a
// TORCH_MODULE holder. Parameters are registered as `weight` and `bias`, shape [C].

#include <pln/functional.h>
#include <pln/options.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace pln {

class ParallelLNImpl : public torch::nn::Cloneable<ParallelLNImpl> {
 public:
  ParallelLNImpl(int64_t num_features, int64_t num_per_group)
      : ParallelLNImpl(ParallelLNOptions(num_features, num_per_group)) {}
  explicit ParallelLNImpl(const ParallelLNOptions& options_);

  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);

  ParallelLNOptions options;
  torch::Tensor weight;  ///< [C], ones initially; undefined unless affine
  torch::Tensor bias;    ///< [C], zeros initially; undefined unless affine
};
TORCH_MODULE(ParallelLN);

class PQNormImpl : public torch::nn::Cloneable<PQNormImpl> {
 public:
  PQNormImpl(int64_t num_features, int64_t num_per_group)
      : PQNormImpl(PQNormOptions(num_features, num_per_group)) {}
  explicit PQNormImpl(const PQNormOptions& options_);

  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);

  PQNormOptions options;
  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(PQNorm);

}  // namespace pln
