// Autograd kernels of the pln operators.
//
// Inputs the fused kernels take run pln::parallel_ln_forward, whose autograd
// kernel is ParallelLNFunction: it saves the per-group statistics and its
// backward runs pln::parallel_ln_backward. That op's own autograd kernel runs
// the fused kernels for a first-order backward and, when a graph of the
// gradient is wanted (create_graph, as PINNs need for second derivatives),
// the composite gradient formulas, which autograd differentiates again.
// Everything else runs the composite ATen ops, differentiable to any order.

#include "ops/ops.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>

#include <string>

namespace pln::ops::autograd {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
bool requires_grad(const OptionalTensor& t) { return t.has_value() && t->requires_grad(); }

// Whether autograd will record this call.
template <typename... Tensors>
bool wants_grad(const Tensors&... tensors) {
  return at::GradMode::is_enabled() && (requires_grad(tensors) || ...);
}

bool has_tangent(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }
bool has_tangent(const OptionalTensor& t) { return t.has_value() && has_tangent(*t); }

// Whether forward-mode AD (dual tensors, torch.func.jvp and jacfwd) carries a
// tangent on an input. ParallelLNFunction has no forward formula (and the
// kernels below autograd would drop the tangent silently): such calls run the
// composite ATen ops, whose forward-mode formulas autograd has.
template <typename... Tensors>
bool wants_tangent(const Tensors&... tensors) {
  return (has_tangent(tensors) || ...);
}

class ParallelLNFunction : public torch::autograd::Function<ParallelLNFunction> {
 public:
  // LibTorch 1.13's Function::apply cannot take undefined tensors: an absent
  // weight or bias travels as an empty placeholder, flagged by has_weight/has_bias.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight_or_empty, const at::Tensor& bias_or_empty,
                               bool has_weight, bool has_bias, int64_t num_features,
                               int64_t num_per_group, double eps, bool centering,
                               const std::string& layout) {
    // Below autograd, or this op's own autograd kernel would run again.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [output, mean, rstd] = ops::parallel_ln_forward(
        input, has_weight ? OptionalTensor(weight_or_empty) : OptionalTensor(),
        has_bias ? OptionalTensor(bias_or_empty) : OptionalTensor(), num_features, num_per_group, eps,
        centering, layout);
    ctx->save_for_backward({input, weight_or_empty, bias_or_empty, mean, rstd});
    ctx->mark_non_differentiable({mean, rstd});
    // The statistics' gradients are never used: without this, autograd would
    // fill a zero tensor for each of them before every backward.
    ctx->set_materialize_grads(false);
    ctx->saved_data["has_weight"] = has_weight;
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["num_features"] = num_features;
    ctx->saved_data["num_per_group"] = num_per_group;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["centering"] = centering;
    ctx->saved_data["layout"] = layout;
    return {output, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // No gradient reached the output (grads are not materialised): none flows
    // back, one undefined gradient for each of forward's ten arguments.
    if (!grad_outputs[0].defined()) return variable_list(10);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& bias = saved[2];
    const bool has_weight = ctx->saved_data["has_weight"].toBool();
    const bool has_bias = ctx->saved_data["has_bias"].toBool();
    const std::string layout = ctx->saved_data["layout"].toStringRef();
    auto [dx, dweight, dbias] = ops::parallel_ln_backward(
        grad_outputs[0], input, saved[3], saved[4], has_weight ? OptionalTensor(weight) : OptionalTensor(),
        ctx->saved_data["num_features"].toInt(), ctx->saved_data["num_per_group"].toInt(),
        ctx->saved_data["eps"].toDouble(), ctx->saved_data["centering"].toBool(), layout);
    const at::Tensor none;
    return {ctx->needs_input_grad(0) ? dx : none,
            has_weight && ctx->needs_input_grad(1) ? dweight.reshape_as(weight) : none,
            has_bias && ctx->needs_input_grad(2) ? dbias.reshape_as(bias) : none,
            none, none, none, none, none, none, none};
  }
};

at::Tensor placeholder(const OptionalTensor& t, const at::Tensor& input) {
  return t.has_value() ? *t : at::empty({0}, input.options());
}

}  // namespace

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  // Without a tangent: below autograd when nothing records the call, else the
  // fused forward op under ParallelLNFunction where the fused kernels take the
  // input. Otherwise the composite formulation, which autograd records.
  if (!wants_tangent(input, weight, bias)) {
    if (!wants_grad(input, weight, bias)) {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return ops::parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
    }
    if (has_fused_kernels(input, p)) {
      return std::get<0>(
          ops::parallel_ln_forward(input, weight, bias, num_features, num_per_group, eps, centering, layout));
    }
  }
  return composite::checked_forward(input, weight, bias,
                                    checked_spec(num_features, num_per_group, eps, centering, layout, p, p));
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                   bool centering, c10::string_view layout) {
  if (!wants_grad(input, weight, bias) && !wants_tangent(input, weight, bias)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return ops::pq_norm(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
  }
  // Still above the autograd key: at p = q = 2 composite::pq_norm calls
  // parallel_ln, whose autograd kernel above takes the fused path; otherwise
  // autograd records the composite formulation.
  return composite::pq_norm(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double eps, bool centering, c10::string_view layout) {
  const auto outputs = ParallelLNFunction::apply(
      input, placeholder(weight, input), placeholder(bias, input), weight.has_value(), bias.has_value(),
      num_features, num_per_group, eps, centering, std::string(layout.data(), layout.size()));
  return {outputs[0], outputs[1], outputs[2]};
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input,
                             const at::Tensor& mean, const at::Tensor& rstd,
                             const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering,
                             c10::string_view layout) {
  if (!wants_grad(grad_output, input, weight) && !wants_tangent(grad_output, input, weight)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return ops::parallel_ln_backward(grad_output, input, mean, rstd, weight, num_features, num_per_group,
                                     eps, centering, layout);
  }
  // A graph of the gradient (or its tangent) is wanted: the composite
  // formulas, which autograd differentiates (the statistics are recomputed
  // from the input).
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  auto g = composite::backward(grad_output, input, value_or_undefined(weight), spec,
                               /*want_dx=*/true, /*want_dweight=*/true, /*want_dbias=*/true);
  return {g.dx, g.dweight, g.dbias};
}

}  // namespace pln::ops::autograd
