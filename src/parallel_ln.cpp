// pln::functional::parallel_ln: validation, path selection and the custom
// autograd function over the fused CPU kernels.

#include <pln/functional.h>

#include "composite.h"
#include "cpu/kernels.h"
#include "layout.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace pln {
namespace detail {
namespace {

GroupNormSpec spec_of(const ParallelLNOptions& o) {
  return {o.num_features(), o.num_per_group(), o.eps(), o.centering(), o.resolved_layout(),
          o.p(), o.p()};
}

struct ForwardResult {
  torch::Tensor y, mean, rstd;
};

// save_stats = false: inference, nothing will be differentiated, so the per-group
// mean and 1/std are not written out.
ForwardResult fused_forward(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias, const GroupNormSpec& spec,
                            bool save_stats = true) {
  const KernelView view = kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  const auto& g = view.geometry;
  torch::Tensor y = at::empty(x.sizes(), x.options().memory_format(view.format));
  torch::Tensor mean, rstd;
  if (save_stats) {
    mean = at::empty({g.num_stats()}, x.options());
    rstd = at::empty({g.num_stats()}, x.options());
  }
  const torch::Tensor w = weight.defined() ? weight.reshape({-1}).contiguous()
                                           : at::ones({spec.num_features}, x.options());
  const torch::Tensor b = bias.defined() ? bias.reshape({-1}).contiguous()
                                         : at::zeros({spec.num_features}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_forward", [&] {
    cpu::forward<scalar_t>(g, view.data.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                           b.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                           save_stats ? mean.data_ptr<scalar_t>() : nullptr,
                           save_stats ? rstd.data_ptr<scalar_t>() : nullptr, spec.eps,
                           spec.centering);
  });
  return {y, mean, rstd};
}

Gradients fused_backward(const torch::Tensor& dy, const torch::Tensor& x,
                         const torch::Tensor& mean, const torch::Tensor& rstd,
                         const torch::Tensor& weight, const GroupNormSpec& spec, bool want_dx,
                         bool want_dweight, bool want_dbias) {
  const KernelView view = kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  const torch::Tensor dy_view = conform(dy, view);
  const torch::Tensor w = weight.defined() ? weight.reshape({-1}).contiguous()
                                           : at::ones({spec.num_features}, x.options());
  Gradients grads;
  if (want_dx) grads.dx = at::empty(x.sizes(), x.options().memory_format(view.format));
  torch::Tensor dw, db;
  if (want_dweight || want_dbias) {
    dw = at::empty({spec.num_features}, x.options().dtype(at::kDouble));
    db = at::empty({spec.num_features}, x.options().dtype(at::kDouble));
  }
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_backward", [&] {
    cpu::backward<scalar_t>(view.geometry, dy_view.data_ptr<scalar_t>(),
                            view.data.data_ptr<scalar_t>(), mean.data_ptr<scalar_t>(),
                            rstd.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), spec.centering,
                            want_dx ? grads.dx.data_ptr<scalar_t>() : nullptr,
                            dw.defined() ? dw.data_ptr<double>() : nullptr,
                            db.defined() ? db.data_ptr<double>() : nullptr);
  });
  if (want_dweight) grads.dweight = dw.to(x.scalar_type());
  if (want_dbias) grads.dbias = db.to(x.scalar_type());
  return grads;
}

torch::Tensor absent(const torch::Tensor& x) { return at::empty({0}, x.options()); }
torch::Tensor present(const torch::Tensor& t) { return t.numel() > 0 ? t : torch::Tensor(); }

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward and first-order backward run the fused kernels. A backward asked to
// build a graph (create_graph, as PINNs need for second derivatives) runs the
// composite gradient formulas instead, which autograd can differentiate again.
class ParallelLNFunction : public torch::autograd::Function<ParallelLNFunction> {
 public:
  // LibTorch 1.13's Function::apply cannot take undefined tensors: an absent
  // weight or bias travels as an empty placeholder (see absent()).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight_or_empty,
                               const torch::Tensor& bias_or_empty, int64_t num_per_group,
                               double eps, bool centering, int64_t layout) {
    const torch::Tensor weight = present(weight_or_empty), bias = present(bias_or_empty);
    const GroupNormSpec spec{x.size(layout_channel_axis(static_cast<Layout>(layout))),
                             num_per_group, eps, centering, static_cast<Layout>(layout)};
    ForwardResult r = fused_forward(x, weight, bias, spec);
    ctx->save_for_backward({x, weight_or_empty, r.mean, r.rstd});
    ctx->saved_data["num_per_group"] = num_per_group;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["centering"] = centering;
    ctx->saved_data["layout"] = layout;
    ctx->saved_data["bias_shape"] = bias.defined() ? bias.sizes().vec() : std::vector<int64_t>{};
    return r.y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor weight = present(saved[1]);
    const auto layout = static_cast<Layout>(ctx->saved_data["layout"].toInt());
    const GroupNormSpec spec{x.size(layout_channel_axis(layout)),
                             ctx->saved_data["num_per_group"].toInt(),
                             ctx->saved_data["eps"].toDouble(),
                             ctx->saved_data["centering"].toBool(), layout};
    const bool want_dx = ctx->needs_input_grad(0);
    const bool want_dw = weight.defined() && ctx->needs_input_grad(1);
    const bool want_db = ctx->saved_data["bias_shape"].toIntVector().size() > 0 &&
                         ctx->needs_input_grad(2);
    const torch::Tensor& dy = grad_outputs[0];
    Gradients g = torch::GradMode::is_enabled()
                      ? composite_backward(dy, x, weight, spec, want_dx, want_dw, want_db)
                      : fused_backward(dy, x, saved[2], saved[3], weight, spec, want_dx,
                                       want_dw, want_db);
    if (want_dw) g.dweight = g.dweight.reshape(weight.sizes());
    if (want_db) g.dbias = g.dbias.reshape(ctx->saved_data["bias_shape"].toIntVector());
    return {g.dx, g.dweight, g.dbias, {}, {}, {}, {}};
  }
};

void check_call(const torch::Tensor& x, const ParallelLNOptions& options,
                const torch::Tensor& weight, const torch::Tensor& bias) {
  options.validate();
  check_input(x, options.resolved_layout(), options.num_features());
  check_param(weight, "weight", x, options.num_features());
  check_param(bias, "bias", x, options.num_features());
}

}  // namespace

bool uses_fused_kernels(const torch::Tensor& x, const ParallelLNOptions& options) {
  return x.device().is_cpu() && x.layout() == c10::kStrided &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble) &&
         options.p() == 2.0;
}

const char* cpu_kernels() { return cpu::capability(); }

torch::Tensor parallel_ln_composite(const torch::Tensor& x, const ParallelLNOptions& options,
                                    const torch::Tensor& weight, const torch::Tensor& bias) {
  check_call(x, options, weight, bias);
  return composite_forward(x, spec_of(options), weight, bias);
}

}  // namespace detail

namespace functional {

torch::Tensor parallel_ln(const torch::Tensor& x, const ParallelLNOptions& options,
                          const torch::Tensor& weight, const torch::Tensor& bias) {
  detail::check_call(x, options, weight, bias);
  if (!detail::uses_fused_kernels(x, options)) {
    return detail::composite_forward(x, detail::spec_of(options), weight, bias);
  }
  const bool differentiable =
      torch::GradMode::is_enabled() &&
      (x.requires_grad() || (weight.defined() && weight.requires_grad()) ||
       (bias.defined() && bias.requires_grad()));
  if (!differentiable) {
    return detail::fused_forward(x, weight, bias, detail::spec_of(options), false).y;
  }
  return detail::ParallelLNFunction::apply(x, weight.defined() ? weight : detail::absent(x),
                                           bias.defined() ? bias : detail::absent(x),
                                           options.num_per_group(),
                                           options.eps(), options.centering(),
                                           static_cast<int64_t>(options.resolved_layout()));
}

torch::Tensor pq_norm(const torch::Tensor& x, const PQNormOptions& options,
                      const torch::Tensor& weight, const torch::Tensor& bias) {
  options.validate();
  if (options.p() == 2.0 && options.q() == 2.0) {
    return parallel_ln(x,
                       ParallelLNOptions(options.num_features(), options.num_per_group())
                           .eps(options.eps())
                           .centering(options.centering())
                           .layout(options.resolved_layout()),
                       weight, bias);
  }
  const Layout layout = options.resolved_layout();
  detail::check_input(x, layout, options.num_features());
  detail::check_param(weight, "weight", x, options.num_features());
  detail::check_param(bias, "bias", x, options.num_features());
  return detail::composite_forward(
      x,
      {options.num_features(), options.num_per_group(), options.eps(), options.centering(),
       layout, options.p(), options.q()},
      weight, bias);
}

}  // namespace functional
}  // namespace pln
