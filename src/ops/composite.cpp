// The composite ATen formulation of the pln operators (any p, any device,
// differentiable to any order), and the CompositeExplicitAutograd kernels
// over it: every device without fused kernels, and the inputs the fused
// kernels do not take, run these. They run below autograd; autograd.cpp gives
// them their gradients, and calls the formulation itself where autograd must
// record it (forward-mode tangents, create_graph backwards).

#include "ops/ops.h"

#include "layout.h"

#include <ATen/ATen.h>

namespace pln::ops::composite {

namespace {

// x with features last, viewed as [positions, groups, g].
at::Tensor grouped(const at::Tensor& x, const ParallelNormSpec& spec) {
  return detail::features_last(x, spec.layout)
      .reshape({-1, spec.num_features / spec.num_per_group, spec.num_per_group});
}

// Inverse of grouped for a tensor shaped like `like`.
at::Tensor ungrouped(const at::Tensor& g, const at::Tensor& like, const ParallelNormSpec& spec) {
  return detail::features_restore(g.reshape_symint(detail::features_last(like, spec.layout).sym_sizes()),
                                  spec.layout);
}

// The centred groups. Each group is shifted by its first value before its
// mean is taken, as in the fused kernels: xg - mean(xg) would round at a
// common offset's magnitude and leave the centred values off-centre, an error
// that every derivative multiplies by rstd once more. The result does not
// depend on the shift, which therefore carries no gradient.
at::Tensor centred(const at::Tensor& xg) {
  const at::Tensor shifted = xg - xg.narrow(-1, 0, 1).detach();
  return shifted - shifted.mean(-1, true);
}

at::Tensor run(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
               const ParallelNormSpec& spec) {
  // The same strides as the fused kernels' outputs, which the Meta kernels promise.
  return checked_forward(input, weight, bias, spec).contiguous(detail::output_format(input, spec.layout));
}

}  // namespace

at::Tensor forward(const at::Tensor& x, const ParallelNormSpec& spec, const at::Tensor& weight,
                   const at::Tensor& bias) {
  const at::Tensor xg = grouped(x, spec);
  const at::Tensor xc = spec.centering ? centred(xg) : xg;
  at::Tensor y;
  if (spec.p == 2.0 && spec.q == 2.0) {
    y = xc * (xc.pow(2).mean(-1, true) + spec.eps).rsqrt();
  } else {
    const at::Tensor stat = xc.abs().pow(spec.p).mean(-1, true);
    const at::Tensor numer = spec.p == spec.q ? xc : xc.sign() * xc.abs().pow(spec.p / spec.q);
    y = numer / (stat + spec.eps).pow(1.0 / spec.q);
  }
  y = ungrouped(y, x, spec);
  const auto shape = detail::param_shape(spec.layout, spec.num_features);
  if (weight.defined()) y = y * weight.reshape(shape);
  if (bias.defined()) y = y + bias.reshape(shape);
  return y;
}

at::Tensor checked_forward(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                           const ParallelNormSpec& spec) {
  return forward(input, check_tensors(input, weight, bias, spec), value_or_undefined(weight),
                 value_or_undefined(bias));
}

Gradients backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& weight,
                   const ParallelNormSpec& spec, bool want_dx, bool want_dweight, bool want_dbias) {
  const int64_t NG = spec.num_features / spec.num_per_group;
  const at::Tensor xg = grouped(x, spec);
  const at::Tensor dyg = grouped(dy, spec);
  const at::Tensor xc = spec.centering ? centred(xg) : xg;
  const at::Tensor rstd = (xc.pow(2).mean(-1, true) + spec.eps).rsqrt();
  const at::Tensor y = xc * rstd;
  Gradients grads;
  if (want_dx) {
    const at::Tensor gy = weight.defined() ? dyg * weight.reshape({NG, spec.num_per_group}) : dyg;
    at::Tensor inner = gy - y * (gy * y).mean(-1, true);
    if (spec.centering) inner = inner - gy.mean(-1, true);
    grads.dx = ungrouped(rstd * inner, x, spec);
  }
  if (want_dweight) grads.dweight = (dyg * y).sum(0).reshape({spec.num_features});
  if (want_dbias) grads.dbias = dyg.sum(0).reshape({spec.num_features});
  return grads;
}

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  return run(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, p));
}

at::Tensor pq_norm(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                   int64_t num_features, int64_t num_per_group, double p, double q, double eps,
                   bool centering, c10::string_view layout) {
  const auto spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, q);
  // The one place p = q = 2 becomes LN: the autograd kernel comes here too.
  if (p == 2.0 && q == 2.0) {
    return ops::parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p);
  }
  return run(input, weight, bias, spec);
}

}  // namespace pln::ops::composite
