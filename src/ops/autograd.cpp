// Autograd kernels of the pln operators.
//
// Inputs the fused kernels take run pln::parallel_ln_forward, whose autograd
// kernel is ParallelLNFunction: it saves the per-group statistics and its
// backward runs pln::parallel_ln_backward. That op's own autograd kernel runs
// the fused kernels for a first-order backward and, when a graph of the
// gradient is wanted (create_graph, as PINNs need for second derivatives),
// the composite gradient formulas, which autograd differentiates again.
// Everything else runs the composite ATen ops, differentiable to any order.

#include "ops/autograd_support.h"
#include "ops/ops.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>

#include <string>

namespace pln::ops::autograd {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using autograd_support::placeholder;
using autograd_support::SavedGrouping;
using autograd_support::unless_placeholder;
using autograd_support::wants_grad;
using autograd_support::wants_tangent;

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
        input, unless_placeholder(has_weight, weight_or_empty), unless_placeholder(has_bias, bias_or_empty),
        num_features, num_per_group, eps, centering, layout);
    ctx->save_for_backward({input, weight_or_empty, bias_or_empty, mean, rstd});
    ctx->mark_non_differentiable({mean, rstd});
    // The statistics' gradients are never used: without this, autograd would
    // fill a zero tensor for each of them before every backward.
    ctx->set_materialize_grads(false);
    SavedGrouping{has_weight, has_bias, num_features, num_per_group, eps, centering}.save(ctx);
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
    const auto g = SavedGrouping::load(ctx);
    const std::string layout = ctx->saved_data["layout"].toStringRef();
    auto [dx, dweight, dbias] =
        ops::parallel_ln_backward(grad_outputs[0], input, saved[3], saved[4], unless_placeholder(g.has_weight, weight),
                                  g.num_features, g.num_per_group, g.eps, g.centering, layout);
    const at::Tensor none;
    return {ctx->needs_input_grad(0) ? dx : none,
            g.has_weight && ctx->needs_input_grad(1) ? dweight.reshape_as(weight) : none,
            g.has_bias && ctx->needs_input_grad(2) ? dbias.reshape_as(bias) : none,
            none, none, none, none, none, none, none};
  }
};

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
