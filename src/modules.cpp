#include <pln/modules.h>

#include <torch/nn/init.h>

#include <ostream>

namespace pln {
namespace {

void init_affine(torch::Tensor& weight, torch::Tensor& bias) {
  if (weight.defined()) torch::nn::init::ones_(weight);
  if (bias.defined()) torch::nn::init::zeros_(bias);
}

// Registers `weight` and `bias` ([C], ones and zeros) or, without affine, their
// undefined placeholders, as torch::nn::LayerNorm does.
void register_affine(torch::nn::Module& module, bool affine, int64_t num_features,
                     torch::Tensor& weight, torch::Tensor& bias) {
  if (affine) {
    weight = module.register_parameter("weight", torch::empty({num_features}));
    bias = module.register_parameter("bias", torch::empty({num_features}));
  } else {
    weight = module.register_parameter("weight", torch::Tensor(), /*requires_grad=*/false);
    bias = module.register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  }
  init_affine(weight, bias);
}

}  // namespace

template <typename Derived, typename Options>
void NormImplBase<Derived, Options>::reset() {
  options.validate();
  register_affine(*this, options.affine(), options.num_features(), weight, bias);
}

template <typename Derived, typename Options>
void NormImplBase<Derived, Options>::reset_parameters() {
  init_affine(weight, bias);
}

template class NormImplBase<ParallelLNImpl, ParallelLNOptions>;
template class NormImplBase<PQNormImpl, PQNormOptions>;

void ParallelLNImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "pln::ParallelLN(" << options.num_features()
         << ", num_per_group=" << options.num_per_group() << ", eps=" << options.eps()
         << ", centering=" << options.centering() << ", affine=" << options.affine()
         << ", layout=" << to_string(options.resolved_layout());
  if (options.p() != 2.0) stream << ", p=" << options.p();
  stream << ")";
}

torch::Tensor ParallelLNImpl::forward(const torch::Tensor& input) {
  return functional::parallel_ln(input, options, weight, bias);
}

void PQNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "pln::PQNorm(" << options.num_features()
         << ", num_per_group=" << options.num_per_group() << ", p=" << options.p()
         << ", q=" << options.q() << ", eps=" << options.eps()
         << ", centering=" << options.centering() << ", affine=" << options.affine()
         << ", layout=" << to_string(options.resolved_layout()) << ")";
}

torch::Tensor PQNormImpl::forward(const torch::Tensor& input) {
  return functional::pq_norm(input, options, weight, bias);
}

}  // namespace pln
