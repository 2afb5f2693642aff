// pln::gated_norm_forward and pln::gated_norm_backward on the CPU, over the
// stable ABI: the checks of libpln's (src/ops/gated_norm.cpp, with its
// messages) and src/cpu/gated_kernels.h's kernels.

#include "stable/ops.h"
#include "stable/tensors.h"

#include "cpu/gated_kernels.h"

#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

namespace pln::stable {
namespace {

using torch::headeronly::MemoryFormat;

struct GatedSpec {
  int64_t num_features, num_per_group;
  double eps;
  bool centering, gate_before, sigmoid;
  int64_t groups() const { return num_features / num_per_group; }
};

GatedSpec checked(const Tensor& input, const Tensor& gate, const OptionalTensor& weight, const OptionalTensor& bias,
             int64_t num_features, int64_t num_per_group, double eps, bool centering, const std::string& position,
             const std::string& act) {
  check(position == "before" || position == "after",
        "pln::gated_norm: gate_position must be 'before' or 'after' (the norm), got '", position, "'");
  check(act == "silu" || act == "sigmoid", "pln::gated_norm: activation must be 'silu' or 'sigmoid', got '", act, "'");
  check(input.dim() >= 1, "pln::gated_norm: the input needs at least 1 dimension (features last)");
  check(is_floating(input.scalar_type()), "pln::gated_norm: the input must be floating point, got ",
        dtype_text(input.scalar_type()));
  check(sizes_of(gate) == sizes_of(input), "pln::gated_norm: the gate has shape ", shape_text(gate),
        " but the input has shape ", shape_text(input), "; they must be equal");
  check(gate.scalar_type() == input.scalar_type() && same_device(gate, input), "pln::gated_norm: the gate is ",
        dtype_text(gate.scalar_type()), " on ", device_text(gate), " but the input is ",
        dtype_text(input.scalar_type()), " on ", device_text(input));
  const int64_t width = input.size(-1);
  if (num_features <= 0) num_features = width;
  check(num_features == width, "pln::gated_norm: expected ", num_features, " features on the last axis, got ", width,
        " (input shape ", shape_text(input), ")");
  check(num_features > 0, "pln::gated_norm: the input has no features on its last axis (shape ", shape_text(input),
        "); a group needs at least one");
  check(num_per_group > 0 && num_features % num_per_group == 0, "pln::gated_norm: num_per_group (", num_per_group,
        ") must be a positive divisor of the number of features (", num_features, ")");
  check(eps >= 0 && std::isfinite(eps), "pln::gated_norm: eps must be finite and >= 0, got ", eps);
  for (const auto& [p, name] : {std::pair<const OptionalTensor*, const char*>{&weight, "weight"}, {&bias, "bias"}}) {
    if (!p->has_value()) continue;
    check(p->value().numel() == num_features, "pln::gated_norm: ", name, " has ", p->value().numel(),
          " elements, expected ", num_features);
    check(same_device(p->value(), input), "pln::gated_norm: ", name, " is on ", device_text(p->value()),
          " but the input is on ", device_text(input));
  }
  return {num_features, num_per_group, eps, centering, position == "before", act == "sigmoid"};
}

pln::cpu::gated::Shape shape_of(const Tensor& x, const GatedSpec& s) {
  return {x.numel() / s.num_features, s.num_features, s.num_per_group, s.eps, s.centering, s.gate_before, s.sigmoid};
}

Tensor empty_like_contiguous(const Tensor& x, ScalarType type, std::vector<int64_t> sizes) {
  return torch::stable::empty(sizes, type, std::nullopt, x.device(), std::nullopt, MemoryFormat::Contiguous);
}

// y, and the per-group mean and 1/std in the input's dtype where save_stats.
std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& input, const Tensor& gate, const OptionalTensor& weight,
                                           const OptionalTensor& bias, const GatedSpec& s, bool save_stats) {
  // float16 and bfloat16 are read and written as they are, computed in float32
  // (weight, bias and the statistics too), a group at a time.
  const ScalarType type = input.scalar_type(), compute = stats_type(type);
  const Tensor x = torch::stable::contiguous(input), z = torch::stable::contiguous(gate);
  Tensor y = empty_like_contiguous(x, type, sizes_of(x));
  auto stats_sizes = sizes_of(x);
  stats_sizes.back() = s.groups();
  std::optional<Tensor> mean, rstd;
  if (save_stats) {
    mean = empty_like_contiguous(x, compute, stats_sizes);
    rstd = empty_like_contiguous(x, compute, stats_sizes);
  }
  const Tensor w = affine_or(weight, compute, x, s.num_features, 1.0);
  const Tensor b = affine_or(bias, compute, x, s.num_features, 0.0);
  with_stored_type(type, "pln::gated_norm_forward", [&](auto st) {
    using S = decltype(st);
    pln::cpu::gated::forward(shape_of(x, s), stored<S>(x), stored<S>(z), computed<S>(w), computed<S>(b), stored<S>(y),
                             mean ? computed<S>(*mean) : nullptr, rstd ? computed<S>(*rstd) : nullptr);
  });
  if (!save_stats) return {y, y, y};
  return {y, torch::stable::to(*mean, type), torch::stable::to(*rstd, type)};
}

// pln::gated_norm_composite (registered in Python), through the dispatcher.
Tensor composite(const Tensor& input, const Tensor& gate, const OptionalTensor& weight, const OptionalTensor& bias,
                 int64_t num_features, int64_t num_per_group, double eps, bool centering,
                 const std::string& gate_position, const std::string& activation) {
  using torch::stable::detail::from;
  std::array<StableIValue, 10> stack{from(input), from(gate), from(weight), from(bias), from(num_features),
                                     from(num_per_group), from(eps), from(centering), from(gate_position),
                                     from(activation)};
  TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("pln::gated_norm_composite", "", stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

}  // namespace

Tensor gated_norm(const Tensor& input, const Tensor& gate, const OptionalTensor& weight, const OptionalTensor& bias,
                  int64_t num_features, int64_t num_per_group, double eps, bool centering, std::string gate_position,
                  std::string activation) {
  if (!is_floating(input.scalar_type())) {
    return composite(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                     activation);
  }
  const GatedSpec s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                              activation);
  return std::get<0>(forward(input, gate, weight, bias, s, /*save_stats=*/false));
}

std::tuple<Tensor, Tensor, Tensor> gated_norm_forward(const Tensor& input, const Tensor& gate,
                                                      const OptionalTensor& weight, const OptionalTensor& bias,
                                                      int64_t num_features, int64_t num_per_group, double eps,
                                                      bool centering, std::string gate_position,
                                                      std::string activation) {
  const GatedSpec s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                              activation);
  return forward(input, gate, weight, bias, s, /*save_stats=*/true);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> gated_norm_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& gate, const Tensor& mean, const Tensor& rstd,
    const OptionalTensor& weight, const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
    bool centering, std::string gate_position, std::string activation) {
  const GatedSpec s = checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                         activation);
  check(sizes_of(grad_output) == sizes_of(input) && grad_output.scalar_type() == input.scalar_type(),
        "pln::gated_norm_backward: grad_output is ", dtype_text(grad_output.scalar_type()), " of shape ",
        shape_text(grad_output), ", the input ", dtype_text(input.scalar_type()), " of shape ", shape_text(input));
  check(mean.numel() * s.num_per_group == input.numel() && rstd.numel() == mean.numel() &&
            mean.scalar_type() == input.scalar_type(),
        "pln::gated_norm_backward: expected the forward's statistics, one per group");
  // float16 and bfloat16 as they are, computed in float32, as the forward.
  const ScalarType type = input.scalar_type(), compute = stats_type(type);
  const Tensor x = torch::stable::contiguous(input), z = torch::stable::contiguous(gate);
  const Tensor dy = torch::stable::contiguous(grad_output);
  const Tensor w = affine_or(weight, compute, x, s.num_features, 1.0);
  const Tensor b = affine_or(bias, compute, x, s.num_features, 0.0);
  Tensor dx = empty_like_contiguous(x, type, sizes_of(x)), dz = empty_like_contiguous(x, type, sizes_of(x));
  Tensor dw = empty_like_contiguous(x, ScalarType::Double, {s.num_features});
  Tensor db = empty_like_contiguous(x, ScalarType::Double, {s.num_features});
  with_stored_type(type, "pln::gated_norm_backward", [&](auto st) {
    using S = decltype(st);
    pln::cpu::gated::backward(shape_of(x, s), stored<S>(dy), stored<S>(x), stored<S>(z), computed<S>(w),
                              computed<S>(b), /*mean=*/nullptr, /*rstd=*/nullptr,  // taken again from x and z
                              stored<S>(dx), stored<S>(dz), static_cast<double*>(dw.data_ptr()),
                              static_cast<double*>(db.data_ptr()));
  });
  return {dx, dz, torch::stable::to(dw, type), torch::stable::to(db, type)};
}

}  // namespace pln::stable
