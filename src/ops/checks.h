#pragma once
// The operators' argument checks and their messages, written once for both
// registrations: libpln (LibTorch's C++ API, where sizes may be symbolic under
// torch.compile: ops/aten_facts.h) and libpln_stable (LibTorch's stable ABI:
// stable/tensors.h). Neither is included here: each check reads a tensor
// through its library's Facts, a struct of static functions:
//
//   check(ok, parts...)          throws the library's error unless ok
//   dim(t)                       int64_t
//   size(t, d), numel(t)         int64_t, or c10::SymInt (compared, printed)
//   concrete(size)               an int64_t, guarding a symbolic size
//   sizes(t)                     printable, comparable with ==
//   stats_sizes(t, axis, n)      sizes(t) with n at axis (the same kind)
//   dtype(t), stats_dtype(t)     printable, comparable with ==
//   floating(t)                  a floating-point input
//   floating_type(type), half_type(type), element_size(type), kFloat32
//                                of a dtype(t)
//   device(t), same_device(a, b) printable; whether a and b share a device
//
// The text of a message is made only when its check fails. Its parts are
// evaluated on every call: LibTorch's are views and small values; the stable
// ABI's sizes are copied into a vector (a few per call, against the kernels'
// work and the Python route above them).

#include <pln/layout.h>

#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

namespace pln::checks {

/// num_features at or below this (0, -1, ...) means "the input's width": the
/// operators then run on whatever slice of the features they are given, as on
/// a rank's shard under tensor parallelism, provided it holds whole groups.
/// A positive num_features must still equal the input's width.
inline constexpr int64_t kInputWidth = 0;

template <class F>
Layout layout(std::string_view name) {
  const auto parsed = layouts::parse(name);
  F::check(parsed.has_value(), "pln: unknown layout '", name, "'; expected one of nc, ntc, nchw, nhwc, ncl");
  return *parsed;
}

/// The grouping, eps and exponent of a parallel norm (the module options' checks too).
template <class F>
void options(int64_t num_features, int64_t num_per_group, double eps, double p) {
  F::check(num_features > 0, "pln: num_features must be positive, got ", num_features);
  F::check(num_per_group > 0, "pln: num_per_group must be positive, got ", num_per_group);
  F::check(num_features % num_per_group == 0, "pln: num_features (", num_features,
           ") must be divisible by num_per_group (", num_per_group, ")");
  F::check(eps >= 0.0, "pln: eps must be >= 0, got ", eps);  // also rejects NaN
  F::check(p >= 1.0, "pln: p must be >= 1, got ", p);
}

/// x's rank against the layout, and its width against num_features where
/// that is declared (num_features > kInputWidth).
template <class F, class T>
void input(const T& x, Layout layout, int64_t num_features) {
  F::check(F::floating(x), "pln: expected a floating-point input, got dtype ", F::dtype(x));
  const int64_t rank = layouts::rank(layout);
  F::check(F::dim(x) == rank, "pln: layout ", layouts::name(layout), " expects a ", rank, "-D input ",
           layouts::shape_name(layout), ", got a ", F::dim(x), "-D input of shape ", F::sizes(x));
  if (num_features <= kInputWidth) return;
  const int64_t axis = layouts::channel_axis(layout);
  F::check(F::size(x, axis) == num_features, "pln: expected ", num_features, " features on axis ", axis, " of the ",
           layouts::name(layout), " input, got ", F::size(x, axis), " (input shape ", F::sizes(x), ")");
}

/// The input's width where num_features stands for it: a whole number of
/// groups (a shard of the features holds whole groups).
template <class F, class T>
int64_t width(const T& x, Layout layout, int64_t num_features, int64_t num_per_group) {
  const int64_t axis = layouts::channel_axis(layout);
  const int64_t width = F::concrete(F::size(x, axis));
  F::check(width > 0 && width % num_per_group == 0, "pln: the input's width, ", width, " features on axis ", axis,
           " of the ", layouts::name(layout), " input (num_features = ", num_features,
           ": the input's width), is not a whole number of groups of num_per_group = ", num_per_group,
           " features; a shard of the features must hold whole groups (input shape ", F::sizes(x), ")");
  return width;
}

/// Whether an affine parameter of dtype `param` goes with an input of dtype
/// `input`: the same dtype, float32 with a float16 or bfloat16 input (as
/// nn.LayerNorm takes them), or a narrower floating type, widened exactly.
template <class F, class Type>
bool param_type_fits(const Type& param, const Type& input) {
  if (param == input) return true;
  if (!F::floating_type(param)) return false;
  if (F::half_type(input)) return param == F::kFloat32;
  return F::element_size(param) < F::element_size(input);
}

/// An affine parameter ("weight" or "bias") against x.
template <class F, class T>
void param(const T& p, const char* name, const T& x, int64_t num_features) {
  F::check(F::numel(p) == num_features, "pln: ", name, " must have ", num_features, " elements (num_features), got ",
           F::numel(p), " (shape ", F::sizes(p), ")");
  F::check(param_type_fits<F>(F::dtype(p), F::dtype(x)), "pln: ", name, " has dtype ", F::dtype(p), " but the input has dtype ",
           F::dtype(x), " (the parameters take the input's dtype, float32 with a float16 or bfloat16 input, or a "
           "narrower floating type, which is widened)");
  F::check(F::same_device(p, x), "pln: ", name, " is on ", F::device(p), " but the input is on ", F::device(x));
}

/// parallel_ln_backward's tensors against its (checked) input: devices, the
/// gradient's shape and dtype, the forward's statistics.
template <class F, class T>
void backward(const T& grad_output, const T& input, const T& mean, const T& rstd, Layout layout,
              int64_t num_features, int64_t num_per_group) {
  // A kernel would take a tensor on another device as a raw pointer (an
  // illegal address on a GPU): say which one is where.
  const std::pair<const T*, const char*> on_device[] = {{&grad_output, "grad_output"}, {&mean, "mean"}, {&rstd, "rstd"}};
  for (const auto& [t, name] : on_device) {
    F::check(F::same_device(*t, input), "pln::parallel_ln_backward: ", name, " is on ", F::device(*t),
             " but the input is on ", F::device(input));
  }
  F::check(F::sizes(grad_output) == F::sizes(input), "pln::parallel_ln_backward: grad_output has shape ",
           F::sizes(grad_output), " but the input has shape ", F::sizes(input));
  F::check(F::dtype(grad_output) == F::dtype(input), "pln::parallel_ln_backward: grad_output has dtype ",
           F::dtype(grad_output), " but the input has dtype ", F::dtype(input));
  const auto expected = F::stats_sizes(input, layouts::channel_axis(layout), num_features / num_per_group);
  for (const T* s : {&mean, &rstd}) {
    F::check(F::sizes(*s) == expected && F::dtype(*s) == F::stats_dtype(input),
             "pln::parallel_ln_backward: expected the forward's statistics, ", F::stats_dtype(input), " of shape ",
             expected, ", got shape ", F::sizes(*s), " and dtype ", F::dtype(*s));
  }
}

/// gated_norm's string options.
template <class F>
void gated_options(std::string_view position, std::string_view activation) {
  F::check(position == "before" || position == "after",
           "pln::gated_norm: gate_position must be 'before' or 'after' (the norm), got '", position, "'");
  F::check(activation == "silu" || activation == "sigmoid",
           "pln::gated_norm: activation must be 'silu' or 'sigmoid', got '", activation, "'");
}

/// gated_norm's tensors and grouping (features last); returns the feature
/// count, the input's width where num_features stands for it.
template <class F, class T>
int64_t gated_tensors(const T& input, const T& gate, const T* weight, const T* bias, int64_t num_features,
                      int64_t num_per_group, double eps) {
  F::check(F::dim(input) >= 1, "pln::gated_norm: the input needs at least 1 dimension (features last)");
  F::check(F::floating(input), "pln::gated_norm: the input must be floating point, got ", F::dtype(input));
  F::check(F::sizes(gate) == F::sizes(input), "pln::gated_norm: the gate has shape ", F::sizes(gate),
           " but the input has shape ", F::sizes(input), "; they must be equal");
  F::check(F::dtype(gate) == F::dtype(input) && F::same_device(gate, input), "pln::gated_norm: the gate is ",
           F::dtype(gate), " on ", F::device(gate), " but the input is ", F::dtype(input), " on ", F::device(input));
  const int64_t width = F::concrete(F::size(input, F::dim(input) - 1));
  if (num_features <= kInputWidth) num_features = width;
  F::check(num_features == width, "pln::gated_norm: expected ", num_features, " features on the last axis, got ",
           width, " (input shape ", F::sizes(input), ")");
  F::check(num_features > 0, "pln::gated_norm: the input has no features on its last axis (shape ", F::sizes(input),
           "); a group needs at least one");
  F::check(num_per_group > 0 && num_features % num_per_group == 0, "pln::gated_norm: num_per_group (",
           num_per_group, ") must be a positive divisor of the number of features (", num_features, ")");
  F::check(eps >= 0 && std::isfinite(eps), "pln::gated_norm: eps must be finite and >= 0, got ", eps);
  for (const auto& [p, name] : {std::pair<const T*, const char*>{weight, "weight"}, {bias, "bias"}}) {
    if (p == nullptr) continue;
    F::check(F::numel(*p) == num_features, "pln::gated_norm: ", name, " has ", F::numel(*p), " elements, expected ",
             num_features);
    F::check(F::same_device(*p, input), "pln::gated_norm: ", name, " is on ", F::device(*p), " but the input is on ",
             F::device(input));
  }
  return num_features;
}

/// gated_norm_backward's gradient and statistics against its (checked) input.
template <class F, class T>
void gated_backward(const T& grad_output, const T& input, const T& mean, const T& rstd, int64_t num_per_group) {
  F::check(F::sizes(grad_output) == F::sizes(input) && F::dtype(grad_output) == F::dtype(input),
           "pln::gated_norm_backward: grad_output is ", F::dtype(grad_output), " of shape ", F::sizes(grad_output),
           ", the input ", F::dtype(input), " of shape ", F::sizes(input));
  F::check(F::numel(mean) * num_per_group == F::numel(input) && F::numel(rstd) == F::numel(mean) &&
               F::dtype(mean) == F::dtype(input),
           "pln::gated_norm_backward: expected the forward's statistics, one per group");
}

}  // namespace pln::checks
