#pragma once
// What the autograd kernels of the ops share: the route a call takes, whether
// autograd records a call or forward-mode AD carries a tangent through it,
// the empty placeholder an absent weight or bias travels as through
// torch::autograd::Function::apply (LibTorch 1.13's takes no undefined
// tensor), and the grouping a Function saves for its backward.

#include "ops/ops.h"

#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>

namespace pln::ops::autograd_support {

inline bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
inline bool requires_grad(const OptionalTensor& t) { return t.has_value() && t->requires_grad(); }

/// Whether autograd will record a call on these tensors.
template <typename... Tensors>
bool wants_grad(const Tensors&... tensors) {
  return at::GradMode::is_enabled() && (requires_grad(tensors) || ...);
}

inline bool has_tangent(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }
inline bool has_tangent(const OptionalTensor& t) { return t.has_value() && has_tangent(*t); }

/// Whether forward-mode AD (dual tensors, torch.func.jvp and jacfwd) carries a
/// tangent on one of these tensors. The Functions have no forward formula (and
/// the kernels below autograd would drop the tangent silently): such calls run
/// the composite ATen ops, whose forward-mode formulas autograd has.
template <typename... Tensors>
bool wants_tangent(const Tensors&... tensors) {
  return (has_tangent(tensors) || ...);
}

/// How an op's autograd kernel runs a call: below autograd (nothing records
/// it: the device's kernel runs, fused or composite), through the op's
/// Function over its fused forward and backward ops, or as the composite
/// formulation recorded by autograd (a forward-mode tangent, which the
/// Functions have no formula for, or an input the fused kernels do not take).
enum class Route { kBelowAutograd, kFunction, kComposite };

/// `fused`: whether the op's fused kernels take the call (fused_kernels_take).
template <typename... Tensors>
Route route(bool fused, const Tensors&... tensors) {
  if (wants_tangent(tensors...)) return Route::kComposite;
  if (!wants_grad(tensors...)) return Route::kBelowAutograd;
  return fused ? Route::kFunction : Route::kComposite;
}

/// An absent weight or bias as an empty tensor of the input's options, and back.
inline at::Tensor placeholder(const OptionalTensor& t, const at::Tensor& input) {
  return t.has_value() ? *t : at::empty({0}, input.options());
}
inline OptionalTensor unless_placeholder(bool present, const at::Tensor& t) {
  return present ? OptionalTensor(t) : OptionalTensor();
}

/// The grouping arguments a Function's backward needs, kept in its context.
struct SavedGrouping {
  bool has_weight, has_bias;
  int64_t num_features, num_per_group;
  double eps;
  bool centering;

  void save(torch::autograd::AutogradContext* ctx) const {
    ctx->saved_data["has_weight"] = has_weight;
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["num_features"] = num_features;
    ctx->saved_data["num_per_group"] = num_per_group;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["centering"] = centering;
  }
  static SavedGrouping load(torch::autograd::AutogradContext* ctx) {
    auto& d = ctx->saved_data;
    return {d["has_weight"].toBool(), d["has_bias"].toBool(), d["num_features"].toInt(),
            d["num_per_group"].toInt(), d["eps"].toDouble(), d["centering"].toBool()};
  }
};

}  // namespace pln::ops::autograd_support
