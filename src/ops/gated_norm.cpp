// The gated norm: PLN or PLS over groups of the last axis with a gate z shaped
// like the input, multiplied in before the norm (Mamba-2's MambaRMSNormGated:
// norm(x * act(z))) or after it (Gated DeltaNet's: norm(x) * act(z)), act SiLU
// or the sigmoid, in the shape every op has (ops.h):
//
//   pln::gated_norm           the public op
//   pln::gated_norm_forward   y plus the per-group mean and 1/std (fused kernels)
//   pln::gated_norm_backward  dx, dz, dweight, dbias from them
//   pln::gated_norm_composite the composite formulation as an op of its own
//                             (CompositeImplicitAutograd: tracers see its ATen ops)
//
// CPU tensors run the fused kernels of src/cpu/gated_kernels.cpp (float16 and
// bfloat16 read into float registers and rounded once); CUDA tensors, where
// PLN_CUDA_KERNELS=1 in a build with CUDA, those of src/cuda/gated.cu
// (cuda.cpp); every other device the composite ATen formulation, computed in
// float32 for float16 and bfloat16 inputs (as the models' own classes do) and
// rounded once. Under autocast, tensors of mixed dtypes are computed in float32.

#include "ops/gated_norm.h"

#include "ops/aten_facts.h"
#include "ops/aten_maths.h"
#include "ops/autograd_support.h"
#include "ops/formulation.h"
#include "ops/schemas.h"

#include "cpu/gated_kernels.h"
#include "ops/stored.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>
#include <tuple>

namespace pln::ops {
namespace gated_norm_op {

using GatedNormFn = at::Tensor(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                               const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                               bool centering, c10::string_view gate_position, c10::string_view activation);
using GatedForwardFn = Tensor3(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                               const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                               bool centering, c10::string_view gate_position, c10::string_view activation);
using GatedBackwardFn = Tensor4(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                                const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                                const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                                bool centering, c10::string_view gate_position, c10::string_view activation);

namespace {

std::string text(c10::string_view s) { return std::string(s.data(), s.size()); }

}  // namespace

Spec checked(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
             const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps, bool centering,
             c10::string_view gate_position, c10::string_view activation) {
  const auto position = text(gate_position), act = text(activation);
  checks::gated_options<AtenFacts>(position, act);
  TORCH_CHECK(input.defined() && gate.defined(), "pln::gated_norm: input and gate must be defined tensors");
  const at::Tensor* w = weight.has_value() && weight->defined() ? &*weight : nullptr;
  const at::Tensor* b = bias.has_value() && bias->defined() ? &*bias : nullptr;
  num_features = checks::gated_tensors<AtenFacts>(input, gate, w, b, num_features, num_per_group, eps);
  return {num_features, num_per_group, eps, centering, position == "before", act == "sigmoid"};
}

void check_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                    const at::Tensor& rstd, const Spec& s) {
  checks::gated_backward<AtenFacts>(grad_output, input, mean, rstd, s.num_per_group);
}

at::Tensor ones_or(const OptionalTensor& p, const at::TensorOptions& options, int64_t c, double fill) {
  return p.has_value() ? p->reshape({-1}).to(options.dtype()).contiguous() : at::full({c}, fill, options);
}

pln::cpu::gated::Shape shape_of(const at::Tensor& x, const Spec& s) {
  return {x.numel() / s.num_features, s.num_features, s.num_per_group, s.eps, s.centering, s.gate_before,
          s.sigmoid};
}

namespace {

// ------------------------------------------------------------- composite ---

formulation::Gating gating(const Spec& s) {
  return {s.num_per_group, s.eps, s.centering, s.gate_before, s.sigmoid};
}

// ------------------------------------------------------------------- CPU ---

Tensor3 cpu_forward(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                    const OptionalTensor& bias, const Spec& s, bool save_stats) {
  // float16 and bfloat16 are read and written as they are, computed in float32
  // (weight, bias and the statistics too), a group at a time.
  const at::ScalarType type = input.scalar_type(), compute = stats_type(type);
  const at::Tensor x = input.contiguous(), z = gate.contiguous();
  const auto compute_options = x.options().dtype(compute);
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  auto stats_sizes = x.sizes().vec();
  stats_sizes.back() = s.groups();
  at::Tensor mean, rstd;
  if (save_stats) mean = at::empty(stats_sizes, compute_options), rstd = at::empty(stats_sizes, compute_options);
  const at::Tensor w = ones_or(weight, compute_options, s.num_features, 1.0);
  const at::Tensor b = ones_or(bias, compute_options, s.num_features, 0.0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "pln_gated_norm_forward", [&] {
    pln::cpu::gated::forward(shape_of(x, s), stored_ptr<scalar_t>(x), stored_ptr<scalar_t>(z),
                             compute_ptr<scalar_t>(w), compute_ptr<scalar_t>(b), stored_ptr<scalar_t>(y),
                             save_stats ? compute_ptr<scalar_t>(mean) : nullptr,
                             save_stats ? compute_ptr<scalar_t>(rstd) : nullptr);
  });
  if (!save_stats) return {y, mean, rstd};
  return {y, mean.to(type), rstd.to(type)};
}

// ------------------------------------------------------- dispatcher calls ---

Tensor3 call_forward(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                     const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                     bool centering, c10::string_view gate_position, c10::string_view activation) {
  static const auto op = handle<GatedForwardFn>("pln::gated_norm_forward");
  return op.call(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position, activation);
}

Tensor4 call_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                      const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation) {
  static const auto op = handle<GatedBackwardFn>("pln::gated_norm_backward");
  return op.call(grad_output, input, gate, mean, rstd, weight, bias, num_features, num_per_group, eps, centering,
                 gate_position, activation);
}

// ------------------------------------------------------------- kernels ---

at::Tensor cpu_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation) {
  if (!fused_kernels_take(input)) {
    return composite_kernel(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                            activation);
  }
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  return std::get<0>(cpu_forward(input, gate, weight, bias, s, /*save_stats=*/false));
}

Tensor3 cpu_forward_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                           const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                           bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  TORCH_CHECK(fused_kernels_take(input), "pln::gated_norm_forward: the fused CPU kernels take floating-point input, got ",
              input.scalar_type());
  return cpu_forward(input, gate, weight, bias, s, /*save_stats=*/true);
}

Tensor4 cpu_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                            const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                            bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  TORCH_CHECK(fused_kernels_take(input), "pln::gated_norm_backward: the fused CPU kernels take floating-point input, got ",
              input.scalar_type());
  check_backward(grad_output, input, mean, rstd, s);
  // float16 and bfloat16 as they are, computed in float32, as the forward.
  const at::ScalarType type = input.scalar_type(), compute = stats_type(type);
  const at::Tensor x = input.contiguous(), z = gate.contiguous(), dy = grad_output.contiguous();
  const auto compute_options = x.options().dtype(compute);
  const at::Tensor w = ones_or(weight, compute_options, s.num_features, 1.0);
  const at::Tensor b = ones_or(bias, compute_options, s.num_features, 0.0);
  at::Tensor dx = at::empty_like(x, at::MemoryFormat::Contiguous), dz = at::empty_like(x, at::MemoryFormat::Contiguous);
  at::Tensor dw = at::empty({s.num_features}, x.options().dtype(at::kDouble));
  at::Tensor db = at::empty({s.num_features}, x.options().dtype(at::kDouble));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "pln_gated_norm_backward", [&] {
    pln::cpu::gated::backward(shape_of(x, s), stored_ptr<scalar_t>(dy), stored_ptr<scalar_t>(x),
                              stored_ptr<scalar_t>(z), compute_ptr<scalar_t>(w), compute_ptr<scalar_t>(b),
                              /*mean=*/nullptr, /*rstd=*/nullptr,  // taken again from x and z
                              stored_ptr<scalar_t>(dx), stored_ptr<scalar_t>(dz), dw.data_ptr<double>(),
                              db.data_ptr<double>());
  });
  return {dx, dz, dw.to(type), db.to(type)};
}

at::Tensor meta_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                       const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                       bool centering, c10::string_view gate_position, c10::string_view activation) {
  checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position, activation);
  return at::empty_like(input, at::MemoryFormat::Contiguous);
}

Tensor3 meta_forward_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                            bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  c10::SymDimVector shape(input.sym_sizes().begin(), input.sym_sizes().end());
  shape.back() = s.groups();
  return {at::empty_like(input, at::MemoryFormat::Contiguous), at::empty_symint(shape, input.options()),
          at::empty_symint(shape, input.options())};
}

Tensor4 meta_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                             const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                             const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                             bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  check_backward(grad_output, input, mean, rstd, s);
  return {at::empty_like(input, at::MemoryFormat::Contiguous), at::empty_like(input, at::MemoryFormat::Contiguous),
          at::empty({s.num_features}, input.options()), at::empty({s.num_features}, input.options())};
}

// --------------------------------------------------------------- autograd ---

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using autograd_support::placeholder;
using autograd_support::SavedGrouping;
using autograd_support::unless_placeholder;
using autograd_support::Route;

class GatedNormFunction : public torch::autograd::Function<GatedNormFunction> {
 public:
  // An absent weight or bias travels as an empty placeholder (LibTorch 1.13's apply takes no undefined tensor).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& gate,
                               const at::Tensor& weight_or_empty, const at::Tensor& bias_or_empty, bool has_weight,
                               bool has_bias, int64_t num_features, int64_t num_per_group, double eps,
                               bool centering, const std::string& gate_position, const std::string& activation) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [y, mean, rstd] = call_forward(input, gate, unless_placeholder(has_weight, weight_or_empty),
                                        unless_placeholder(has_bias, bias_or_empty), num_features, num_per_group,
                                        eps, centering, gate_position, activation);
    ctx->save_for_backward({input, gate, weight_or_empty, bias_or_empty, mean, rstd});
    SavedGrouping{has_weight, has_bias, num_features, num_per_group, eps, centering}.save(ctx);
    ctx->saved_data["gate_position"] = gate_position;
    ctx->saved_data["activation"] = activation;
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto g = SavedGrouping::load(ctx);
    const std::string position = ctx->saved_data["gate_position"].toStringRef();
    const std::string act = ctx->saved_data["activation"].toStringRef();
    auto [dx, dz, dw, db] = call_backward(grad_outputs[0], saved[0], saved[1], saved[4], saved[5],
                                          unless_placeholder(g.has_weight, saved[2]),
                                          unless_placeholder(g.has_bias, saved[3]), g.num_features,
                                          g.num_per_group, g.eps, g.centering, position, act);
    const at::Tensor none;
    return {ctx->needs_input_grad(0) ? dx : none,
            ctx->needs_input_grad(1) ? dz : none,
            g.has_weight && ctx->needs_input_grad(2) ? dw.reshape_as(saved[2]) : none,
            g.has_bias && ctx->needs_input_grad(3) ? db.reshape_as(saved[3]) : none,
            none, none, none, none, none, none, none, none};
  }
};

at::Tensor autograd_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                           const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                           bool centering, c10::string_view gate_position, c10::string_view activation) {
  switch (autograd_support::route(fused_kernels_take(input), input, gate, weight, bias)) {
    case Route::kBelowAutograd: {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return gated_norm(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                        activation);
    }
    case Route::kFunction:
      return GatedNormFunction::apply(input, gate, placeholder(weight, input), placeholder(bias, input),
                                      weight.has_value(), bias.has_value(), num_features, num_per_group, eps,
                                      centering, text(gate_position), text(activation))[0];
    case Route::kComposite:
      break;
  }
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  return formulation::gated_norm<AtenMaths>(input, gate, present(weight), present(bias), gating(s)).contiguous();
}

Tensor4 autograd_backward_kernel(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                                 const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                                 const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                                 bool centering, c10::string_view gate_position, c10::string_view activation) {
  if (autograd_support::route(fused_kernels_take(input), grad_output, input, gate, weight, bias) == Route::kBelowAutograd) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad_output, input, gate, mean, rstd, weight, bias, num_features, num_per_group, eps,
                         centering, gate_position, activation);
  }
  // A graph of the gradient is wanted: the composite formulas, which autograd differentiates.
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  auto [dx, dgate, dweight, dbias] =
      formulation::gated_norm_gradient<AtenMaths>(grad_output, input, gate, present(weight), present(bias), gating(s));
  return {dx.contiguous(), dgate.contiguous(), dweight, dbias};
}

Tensor3 autograd_forward_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                                const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                                bool centering, c10::string_view gate_position, c10::string_view activation) {
  // Called below GatedNormFunction only; the statistics carry no gradient.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return call_forward(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                      activation);
}

// ---------------------------------------------------------------- autocast ---

// Under torch.autocast the gate often arrives in another dtype than the input
// (a Linear's bfloat16 beside a scan's float32), and the parameters stay
// float32: tensors of mixed dtypes are computed in float32 (or double, where
// one is) and the output takes the input's dtype, as the models' classes do.
at::Tensor autocast_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                           const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                           bool centering, c10::string_view gate_position, c10::string_view activation) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_keys());
  static const auto op = handle<GatedNormFn>("pln::gated_norm");
  const auto type = input.scalar_type();
  auto common = at::promote_types(type, gate.scalar_type());
  for (const auto* p : {&weight, &bias}) {
    if (p->has_value() && p->value().is_floating_point()) common = at::promote_types(common, p->value().scalar_type());
  }
  const auto differs = [&](const OptionalTensor& t) { return t.has_value() && t->scalar_type() != type; };
  if (gate.scalar_type() == type && !differs(weight) && !differs(bias)) {
    return op.call(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position, activation);
  }
  if (!at::isFloatingType(common) || common == at::kHalf || common == at::kBFloat16) common = at::kFloat;
  const auto as_common = [&](const OptionalTensor& t) -> OptionalTensor {
    return t.has_value() ? OptionalTensor(t->to(common)) : t;
  };
  return op.call(input.to(common), gate.to(common), as_common(weight), as_common(bias), num_features, num_per_group,
                 eps, centering, gate_position, activation)
      .to(type);
}

}  // namespace

at::Tensor composite_kernel(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                            bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  return formulation::gated_norm<AtenMaths>(input, gate, present(weight), present(bias), gating(s)).contiguous();
}

}  // namespace gated_norm_op

at::Tensor gated_norm(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation) {
  static const auto op = handle<gated_norm_op::GatedNormFn>("pln::gated_norm");
  return op.call(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position, activation);
}

}  // namespace pln::ops

// ------------------------------------------------------------ registration ---

namespace gated_op = pln::ops::gated_norm_op;

TORCH_LIBRARY_FRAGMENT(pln, m) {
  namespace schema = pln::ops::schema;
  m.def(schema::kGatedNorm);
  m.def(schema::kGatedNormForward);
  m.def(schema::kGatedNormBackward);
  m.def(schema::kGatedNormComposite);
}

TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("gated_norm", TORCH_FN(gated_op::cpu_kernel));
  m.impl("gated_norm_forward", TORCH_FN(gated_op::cpu_forward_kernel));
  m.impl("gated_norm_backward", TORCH_FN(gated_op::cpu_backward_kernel));
}


TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("gated_norm", TORCH_FN(gated_op::composite_kernel));
}

TORCH_LIBRARY_IMPL(pln, CompositeImplicitAutograd, m) {
  m.impl("gated_norm_composite", TORCH_FN(gated_op::composite_kernel));
}

TORCH_LIBRARY_IMPL(pln, Meta, m) {
  m.impl("gated_norm", TORCH_FN(gated_op::meta_kernel));
  m.impl("gated_norm_forward", TORCH_FN(gated_op::meta_forward_kernel));
  m.impl("gated_norm_backward", TORCH_FN(gated_op::meta_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Autograd, m) {
  m.impl("gated_norm", TORCH_FN(gated_op::autograd_kernel));
  m.impl("gated_norm_forward", TORCH_FN(gated_op::autograd_forward_kernel));
  m.impl("gated_norm_backward", TORCH_FN(gated_op::autograd_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, AutocastCPU, m) { m.impl("gated_norm", TORCH_FN(gated_op::autocast_kernel)); }
TORCH_LIBRARY_IMPL(pln, AutocastCUDA, m) { m.impl("gated_norm", TORCH_FN(gated_op::autocast_kernel)); }
