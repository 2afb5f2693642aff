// What the pln operators share (ops.h): the checks of the grouping and the
// tensors, the one choice between fused kernels and the composite
// formulation, the compute type, the centring, and autocast's parameters.

#include "ops/ops.h"

#include "layout.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>

namespace pln::ops {

bool fused_kernels_take(const at::Tensor& input, double p, bool half_types) {
  if (p != 2.0 || input.layout() != c10::kStrided) return false;
  const auto type = input.scalar_type();
  const bool kernel_type =
      type == at::kFloat || type == at::kDouble || (half_types && (type == at::kHalf || type == at::kBFloat16));
  if (input.device().is_cpu()) return kernel_type;
  if (input.device().is_cuda()) return cuda_kernels_enabled() && kernel_type;
  return false;
}

at::ScalarType stats_type(at::ScalarType input) {
  return input == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor in_compute_type(const at::Tensor& t, at::ScalarType input) {
  return t.defined() ? t.to(stats_type(input)) : t;
}

at::Tensor centred(const at::Tensor& grouped) {
  const at::Tensor shifted = grouped - grouped.narrow(-1, 0, 1).detach();
  return shifted - shifted.mean(-1, true);
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

at::Tensor value_or_undefined(const OptionalTensor& t) { return t.has_value() ? *t : at::Tensor(); }

OptionalTensor defined_or_none(const at::Tensor& t) {
  return t.defined() ? OptionalTensor(t) : OptionalTensor();
}

c10::DispatchKeySet autocast_keys() {
  return c10::DispatchKeySet({c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA});
}

OptionalTensor autocast_param(const OptionalTensor& t, const at::Tensor& input) {
  if (!t.has_value() || !t->defined() || detail::param_type_fits(t->scalar_type(), input.scalar_type())) return t;
  return t->to(stats_type(input.scalar_type()));
}

}  // namespace pln::ops
