#pragma once
// Modules in the style of torch::nn::LayerNorm: Options, a Cloneable Impl and a
// TORCH_MODULE holder. Parameters are registered as `weight` and `bias`, shape [C].

#include <pln/functional.h>
#include <pln/options.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace pln {

/// What the modules of the family share, as torch::nn::NormImplBase is for
/// LibTorch's: the options, the affine parameters and their (re)initialisation.
template <typename Derived, typename Options>
class NormImplBase : public torch::nn::Cloneable<Derived> {
 public:
  NormImplBase(int64_t num_features, int64_t num_per_group)
      : NormImplBase(Options(num_features, num_per_group)) {}
  explicit NormImplBase(const Options& options_) : options(options_) { reset(); }

  /// Checks the options and registers `weight` and `bias`.
  void reset() override;
  /// Ones and zeros again.
  void reset_parameters();

  Options options;
  torch::Tensor weight;  ///< [C], ones initially; undefined unless affine
  torch::Tensor bias;    ///< [C], zeros initially; undefined unless affine
};

class ParallelLNImpl : public NormImplBase<ParallelLNImpl, ParallelLNOptions> {
 public:
  using NormImplBase::NormImplBase;

  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);
};
TORCH_MODULE(ParallelLN);

class PQNormImpl : public NormImplBase<PQNormImpl, PQNormOptions> {
 public:
  using NormImplBase::NormImplBase;

  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);
};
TORCH_MODULE(PQNorm);

/// The gated norm of Mamba-2 (gate before the norm) and of the Gated DeltaNet
/// hybrids (after it) over groups of the last axis: forward(x, gate);
/// without a gate, the norm alone. Parameters `weight` (when affine) and
/// `bias` (when bias), [C]; transformers' MambaRMSNormGated(hidden_size,
/// group_size, eps) is GatedNormOptions(hidden_size, group_size).eps(eps).
class GatedNormImpl : public torch::nn::Cloneable<GatedNormImpl> {
 public:
  GatedNormImpl(int64_t num_features, int64_t num_per_group)
      : GatedNormImpl(GatedNormOptions(num_features, num_per_group)) {}
  explicit GatedNormImpl(const GatedNormOptions& options_) : options(options_) { reset(); }

  /// Checks the options and registers `weight` and `bias`.
  void reset() override;
  /// Ones and zeros again.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& gate = {});

  GatedNormOptions options;
  torch::Tensor weight;  ///< [C], ones initially; undefined unless affine
  torch::Tensor bias;    ///< [C], zeros initially; undefined unless bias
};
TORCH_MODULE(GatedNorm);

extern template class NormImplBase<ParallelLNImpl, ParallelLNOptions>;
extern template class NormImplBase<PQNormImpl, PQNormOptions>;

}  // namespace pln
