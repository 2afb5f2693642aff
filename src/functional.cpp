// include/pln/functional.h, jet.h and activation_jet.h: pln::functional's
// parallel_ln, pq_norm, gated_norm, parallel_ln_jet and activation_jet, the
// C++ face of the pln operators (src/ops/), called through the dispatcher as
// torch.ops.pln is; and the jets' composites for the tests (pln/testing.h).

#include <pln/functional.h>
#include <pln/jet.h>
#include <pln/testing.h>

#include <ATen/ATen.h>

#include "layout.h"
#include "ops/activation_jet.h"
#include "ops/ops.h"

namespace pln {
namespace {

void check_jet(const torch::Tensor& jet, const ParallelLNOptions& o, const torch::Tensor& weight,
               const torch::Tensor& bias) {
  o.validate();
  TORCH_CHECK(jet.dim() >= 2, "parallel_ln_jet: expected a jet [1 + 2D, ..., C] of rank >= 2, got rank ",
              jet.dim());
  TORCH_CHECK(jet.size(0) % 2 == 1, "parallel_ln_jet: a jet has 1 + 2D parts on axis 0 (values, D first ",
              "and D second derivatives), got ", jet.size(0));
  TORCH_CHECK(jet.size(-1) == o.num_features(), "parallel_ln_jet: expected ", o.num_features(),
              " features on the last axis, got ", jet.size(-1), " (shape ", jet.sizes(), ")");
  TORCH_CHECK(o.p() == 2.0, "parallel_ln_jet: supports p = 2 only, got p = ", o.p());
  TORCH_CHECK(at::isFloatingType(jet.scalar_type()),
              "parallel_ln_jet: expected a floating-point jet, got ", jet.scalar_type());
  for (const auto* param : {&weight, &bias}) {
    if (!param->defined()) continue;
    TORCH_CHECK(param->numel() == o.num_features(), "parallel_ln_jet: expected ", o.num_features(),
                " affine parameters, got ", param->numel(), " (shape ", param->sizes(), ")");
  }
}

// The affine parameters on a jet: the weight scales every part, the bias
// shifts the values only (derivatives do not see it).
torch::Tensor jet_affine(torch::Tensor y, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (weight.defined()) y = y * weight.reshape({-1});
  if (bias.defined()) {
    const auto b = bias.reshape({1, -1}).to(y.scalar_type());
    const auto shift = at::cat({b, at::zeros({y.size(0) - 1, bias.numel()}, y.options())});
    std::vector<int64_t> shape(static_cast<size_t>(y.dim()), 1);
    shape.front() = y.size(0);
    shape.back() = bias.numel();
    y = y + shift.reshape(shape);
  }
  return y;
}

}  // namespace

Activation activation_from_name(const std::string& name) { return ops::activation_jet_op::named(name).activation; }

namespace functional {

torch::Tensor parallel_ln(const torch::Tensor& x, const ParallelLNOptions& options,
                          const torch::Tensor& weight, const torch::Tensor& bias) {
  // Checked here too, so that an undefined input is named as such rather than
  // reported by the dispatcher as a call without tensors.
  detail::check_call(x, options, weight, bias);
  return ops::parallel_ln(x, ops::defined_or_none(weight), ops::defined_or_none(bias),
                          options.num_features(), options.num_per_group(), options.eps(),
                          options.centering(), to_string(options.resolved_layout()), options.p());
}

torch::Tensor gated_norm(const torch::Tensor& x, const torch::Tensor& gate, const GatedNormOptions& options,
                         const torch::Tensor& weight, const torch::Tensor& bias) {
  TORCH_CHECK(x.defined() && gate.defined(), "pln: gated_norm's input and gate must be defined tensors");
  return ops::gated_norm(x, gate, ops::defined_or_none(weight), ops::defined_or_none(bias),
                                options.num_features(), options.num_per_group(), options.eps(), options.centering(),
                                options.gate_position(), options.activation());
}

torch::Tensor pq_norm(const torch::Tensor& x, const PQNormOptions& options,
                      const torch::Tensor& weight, const torch::Tensor& bias) {
  options.validate();
  TORCH_CHECK(x.defined(), "pln: input tensor is undefined");
  return ops::pq_norm(x, ops::defined_or_none(weight), ops::defined_or_none(bias),
                      options.num_features(), options.num_per_group(), options.p(), options.q(),
                      options.eps(), options.centering(), to_string(options.resolved_layout()));
}

torch::Tensor parallel_ln_jet(const torch::Tensor& jet, const ParallelLNOptions& options,
                              const torch::Tensor& weight, const torch::Tensor& bias) {
  check_jet(jet, options, weight, bias);
  return jet_affine(ops::parallel_ln_jet(jet, options.num_per_group(), options.eps(), options.centering()), weight,
                    bias);
}

torch::Tensor activation_jet(const torch::Tensor& jet, Activation act) {
  return ops::activation_jet(jet, ops::activation_jet_op::entry_of(act).name);
}

}  // namespace functional

namespace detail {

torch::Tensor activation_jet_composite(const torch::Tensor& jet, Activation act) {
  return ops::activation_jet_op::composite(jet, ops::activation_jet_op::entry_of(act).name);
}

torch::Tensor parallel_ln_jet_composite(const torch::Tensor& jet, const ParallelLNOptions& options,
                                        const torch::Tensor& weight, const torch::Tensor& bias) {
  check_jet(jet, options, weight, bias);
  return jet_affine(ops::jet_op::composite(jet, options.num_per_group(), options.eps(), options.centering()), weight,
                    bias);
}

}  // namespace detail
}  // namespace pln
