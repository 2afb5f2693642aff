// pln::gated_norm_forward and pln::gated_norm_backward on the CPU, over the
// stable ABI: the checks (ops/checks.h) and src/cpu/gated_kernels.h's kernels.

#include "stable/ops.h"
#include "stable/tensors.h"

#include "cpu/gated_kernels.h"

#include <array>
#include <string>
#include <tuple>

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
  checks::gated_options<StableFacts>(position, act);
  num_features = checks::gated_tensors<StableFacts>(input, gate, weight ? &*weight : nullptr,
                                                    bias ? &*bias : nullptr, num_features, num_per_group, eps);
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
  checks::gated_backward<StableFacts>(grad_output, input, mean, rstd, s.num_per_group);
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
