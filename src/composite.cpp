#include "composite.h"

#include "layout.h"

#include <ATen/ATen.h>

namespace pln::detail {

namespace {

// x with features last, viewed as [positions, groups, g].
torch::Tensor grouped(const torch::Tensor& x, const GroupNormSpec& spec) {
  return features_last(x, spec.layout)
      .reshape({-1, spec.num_features / spec.num_per_group, spec.num_per_group});
}

// Inverse of grouped for a tensor shaped like `like`.
torch::Tensor ungrouped(const torch::Tensor& g, const torch::Tensor& like,
                        const GroupNormSpec& spec) {
  return features_restore(g.reshape_symint(features_last(like, spec.layout).sym_sizes()), spec.layout);
}

// The centred groups. Each group is shifted by its first value before its
// mean is taken, as in the fused kernels: xg - mean(xg) would round at a
// common offset's magnitude and leave the centred values off-centre, an error
// that every derivative multiplies by rstd once more. The result does not
// depend on the shift, which therefore carries no gradient.
torch::Tensor centred(const torch::Tensor& xg) {
  const torch::Tensor shifted = xg - xg.narrow(-1, 0, 1).detach();
  return shifted - shifted.mean(-1, true);
}

}  // namespace

torch::Tensor composite_forward(const torch::Tensor& x, const GroupNormSpec& spec,
                                const torch::Tensor& weight, const torch::Tensor& bias) {
  const torch::Tensor xg = grouped(x, spec);
  const torch::Tensor xc = spec.centering ? centred(xg) : xg;
  torch::Tensor y;
  if (spec.p == 2.0 && spec.q == 2.0) {
    y = xc * (xc.pow(2).mean(-1, true) + spec.eps).rsqrt();
  } else {
    const torch::Tensor stat = xc.abs().pow(spec.p).mean(-1, true);
    const torch::Tensor numer =
        spec.p == spec.q ? xc : xc.sign() * xc.abs().pow(spec.p / spec.q);
    y = numer / (stat + spec.eps).pow(1.0 / spec.q);
  }
  y = ungrouped(y, x, spec);
  const auto shape = param_shape(spec.layout, spec.num_features);
  if (weight.defined()) y = y * weight.reshape(shape);
  if (bias.defined()) y = y + bias.reshape(shape);
  return y;
}

Gradients composite_backward(const torch::Tensor& dy, const torch::Tensor& x,
                             const torch::Tensor& weight, const GroupNormSpec& spec,
                             bool want_dx, bool want_dweight, bool want_dbias) {
  const int64_t NG = spec.num_features / spec.num_per_group;
  const torch::Tensor xg = grouped(x, spec);
  const torch::Tensor dyg = grouped(dy, spec);
  const torch::Tensor xc = spec.centering ? centred(xg) : xg;
  const torch::Tensor rstd = (xc.pow(2).mean(-1, true) + spec.eps).rsqrt();
  const torch::Tensor y = xc * rstd;
  Gradients grads;
  if (want_dx) {
    const torch::Tensor gy =
        weight.defined() ? dyg * weight.reshape({NG, spec.num_per_group}) : dyg;
    torch::Tensor inner = gy - y * (gy * y).mean(-1, true);
    if (spec.centering) inner = inner - gy.mean(-1, true);
    grads.dx = ungrouped(rstd * inner, x, spec);
  }
  if (want_dweight) grads.dweight = (dyg * y).sum(0).reshape({spec.num_features});
  if (want_dbias) grads.dbias = dyg.sum(0).reshape({spec.num_features});
  return grads;
}

}  // namespace pln::detail
