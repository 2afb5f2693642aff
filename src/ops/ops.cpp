// Calls of the pln operators through the dispatcher, and what their kernels share.

#include "ops/ops.h"

#include "layout.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>

namespace pln::ops {

namespace {

template <typename Fn>
c10::TypedOperatorHandle<Fn> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

}  // namespace

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  static const auto op = handle<ParallelLNFn>("pln::parallel_ln");
  return op.call(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                   bool centering, c10::string_view layout) {
  static const auto op = handle<PQNormFn>("pln::pq_norm");
  return op.call(input, weight, bias, num_features, num_per_group, p, q, eps, centering, layout);
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double eps, bool centering, c10::string_view layout) {
  static const auto op = handle<ParallelLNForwardFn>("pln::parallel_ln_forward");
  return op.call(input, weight, bias, num_features, num_per_group, eps, centering, layout);
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input,
                             const at::Tensor& mean, const at::Tensor& rstd,
                             const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering,
                             c10::string_view layout) {
  static const auto op = handle<ParallelLNBackwardFn>("pln::parallel_ln_backward");
  return op.call(grad_output, input, mean, rstd, weight, num_features, num_per_group, eps, centering,
                 layout);
}

ParallelNormSpec checked_spec(int64_t num_features, int64_t num_per_group, double eps, bool centering,
                              c10::string_view layout, double p, double q) {
  const Layout parsed = layout_from_string(std::string(layout.data(), layout.size()));
  const bool from_input = num_features <= kInputWidth;
  // The input's width is checked against the group in check_tensors.
  PQNormOptions(from_input ? num_per_group : num_features, num_per_group)
      .eps(eps).p(p).q(q).layout(parsed).validate();
  return {from_input ? kInputWidth : num_features, num_per_group, eps, centering, parsed, p, q};
}

ParallelNormSpec check_tensors(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                               ParallelNormSpec spec) {
  detail::check_input(input, spec.layout, spec.num_features);  // the width too, when declared
  if (spec.num_features <= kInputWidth) {
    const int64_t axis = layout_channel_axis(spec.layout);
    const int64_t width = input.sym_size(axis).guard_int(__FILE__, __LINE__);
    TORCH_CHECK(width > 0 && width % spec.num_per_group == 0, "pln: the input's width, ", width,
                " features on axis ", axis, " of the ", to_string(spec.layout),
                " input (num_features = ", spec.num_features, ": the input's width), is not a whole "
                "number of groups of num_per_group = ", spec.num_per_group,
                " features; a shard of the features must hold whole groups (input shape ", input.sym_sizes(), ")");
    spec.num_features = width;
  }
  detail::check_param(value_or_undefined(weight), "weight", input, spec.num_features);
  detail::check_param(value_or_undefined(bias), "bias", input, spec.num_features);
  return spec;
}

c10::SymDimVector stats_shape(const at::Tensor& input, const ParallelNormSpec& spec) {
  c10::SymDimVector shape(input.sym_sizes().begin(), input.sym_sizes().end());
  shape[static_cast<size_t>(layout_channel_axis(spec.layout))] = spec.num_features / spec.num_per_group;
  return shape;
}

ParallelNormSpec check_backward_tensors(const at::Tensor& grad_output, const at::Tensor& input,
                                        const at::Tensor& mean, const at::Tensor& rstd,
                                        const OptionalTensor& weight, ParallelNormSpec spec) {
  spec = check_tensors(input, weight, {}, spec);  // the weight's device too
  // A kernel would take a tensor on another device as a raw pointer (an
  // illegal address on a GPU): say which one is where.
  const std::pair<const at::Tensor*, const char*> on_device[] = {
      {&grad_output, "grad_output"}, {&mean, "mean"}, {&rstd, "rstd"}};
  for (const auto& [t, name] : on_device) {
    TORCH_CHECK(t->device() == input.device(), "pln::parallel_ln_backward: ", name, " is on ", t->device(),
                " but the input is on ", input.device());
  }
  TORCH_CHECK(grad_output.sym_sizes() == input.sym_sizes(), "pln::parallel_ln_backward: grad_output has shape ",
              grad_output.sym_sizes(), " but the input has shape ", input.sym_sizes());
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "pln::parallel_ln_backward: grad_output has dtype ",
              grad_output.scalar_type(), " but the input has dtype ", input.scalar_type());
  const auto shape = stats_shape(input, spec);
  const auto type = stats_type(input.scalar_type());
  for (const auto* s : {&mean, &rstd}) {
    TORCH_CHECK(s->sym_sizes() == c10::SymIntArrayRef(shape) && s->scalar_type() == type,
                "pln::parallel_ln_backward: expected the forward's statistics, ", type, " of shape ",
                c10::SymIntArrayRef(shape), ", got shape ", s->sym_sizes(), " and dtype ", s->scalar_type());
  }
  return spec;
}

at::ScalarType stats_type(at::ScalarType input) {
  return input == at::kDouble ? at::kDouble : at::kFloat;
}

bool has_fused_kernels(const at::Tensor& input, double p) {
  if (p != 2.0 || input.layout() != c10::kStrided) return false;
  const auto type = input.scalar_type();
  const bool wide = type == at::kFloat || type == at::kDouble;
  if (input.device().is_cpu()) return wide;
  if (input.device().is_cuda()) {
    return cuda_kernels_enabled() && (wide || type == at::kHalf || type == at::kBFloat16);
  }
  return false;
}

#ifndef PLN_WITH_CUDA
bool cuda_kernels_enabled() { return false; }
#endif

at::Tensor value_or_undefined(const OptionalTensor& t) { return t.has_value() ? *t : at::Tensor(); }

OptionalTensor defined_or_none(const at::Tensor& t) {
  return t.defined() ? OptionalTensor(t) : OptionalTensor();
}

}  // namespace pln::ops
