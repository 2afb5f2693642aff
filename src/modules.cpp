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
                     torch::Tensor& weight, torch::Tensor& bias, bool with_bias = true) {
  const auto parameter = [&](const char* name, bool wanted) {
    return wanted ? module.register_parameter(name, torch::empty({num_features}))
                  : module.register_parameter(name, torch::Tensor(), /*requires_grad=*/false);
  };
  weight = parameter("weight", affine);
  bias = parameter("bias", affine && with_bias);
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

void GatedNormImpl::reset() {
  options.validate();
  // As in the Python module: `bias` adds one only with `affine`.
  register_affine(*this, options.affine(), options.num_features(), weight, bias, options.bias());
}

void GatedNormImpl::reset_parameters() { init_affine(weight, bias); }

void GatedNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "pln::GatedNorm(" << options.num_features()
         << ", num_per_group=" << options.num_per_group() << ", eps=" << options.eps()
         << ", centering=" << options.centering() << ", gate_position=" << options.gate_position()
         << ", activation=" << options.activation() << ", affine=" << options.affine()
         << ", bias=" << options.bias() << ")";
}

torch::Tensor GatedNormImpl::forward(const torch::Tensor& input, const torch::Tensor& gate) {
  TORCH_CHECK(input.defined(), "pln::GatedNorm: input tensor is undefined");
  if (gate.defined()) return functional::gated_norm(input, gate, options, weight, bias);
  // The norm alone, over groups of the last axis whatever the input's rank.
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) == options.num_features(), "pln::GatedNorm: expected ",
              options.num_features(), " features on the last axis, got input shape ", input.sizes());
  const auto rows = input.reshape({-1, options.num_features()});
  const auto norm = ParallelLNOptions(options.num_features(), options.num_per_group())
                        .eps(options.eps())
                        .centering(options.centering())
                        .layout(Layout::kNC);
  return functional::parallel_ln(rows, norm, weight, bias).reshape(input.sizes());
}

}  // namespace pln
