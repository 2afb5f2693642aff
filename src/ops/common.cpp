// What the pln operators share (ops.h): the checks of the grouping and the
// tensors, the one choice between fused kernels and the composite
// formulation, the compute type, the centring, and autocast's parameters.

#include "ops/ops.h"

#include "layout.h"
#include "ops/aten_facts.h"
#include "ops/aten_maths.h"
#include "ops/formulation.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>

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

at::Tensor centred(const at::Tensor& grouped) { return formulation::centred<AtenMaths>(grouped).get(); }

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
    spec.num_features = checks::width<AtenFacts>(input, spec.layout, spec.num_features, spec.num_per_group);
  }
  detail::check_param(value_or_undefined(weight), "weight", input, spec.num_features);
  detail::check_param(value_or_undefined(bias), "bias", input, spec.num_features);
  return spec;
}

c10::SymDimVector stats_shape(const at::Tensor& input, const ParallelNormSpec& spec) {
  return AtenFacts::stats_sizes(input, layout_channel_axis(spec.layout), spec.num_features / spec.num_per_group).sizes;
}

ParallelNormSpec check_backward_tensors(const at::Tensor& grad_output, const at::Tensor& input,
                                        const at::Tensor& mean, const at::Tensor& rstd,
                                        const OptionalTensor& weight, ParallelNormSpec spec) {
  spec = check_tensors(input, weight, {}, spec);  // the weight's device too
  checks::backward<AtenFacts>(grad_output, input, mean, rstd, spec.layout, spec.num_features, spec.num_per_group);
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
