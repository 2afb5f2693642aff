// pln::parallel_ln_forward and pln::parallel_ln_backward on the CPU, over the
// stable ABI: the checks (ops/checks.h), the kernels' view of the input
// (ops/kernel_geometry.h), and src/cpu/'s kernels.
// The other dispatch keys of these ops, and the ops around them, are
// registered in Python (python/pln/_stable_ops.py).

#include "stable/ops.h"
#include "stable/tensors.h"

#include <pln/layout.h>

#include "ops/kernel_geometry.h"

#include "cpu/kernels.h"

#include <array>
#include <string>
#include <tuple>
#include <vector>

namespace pln::stable {
namespace {

using torch::headeronly::MemoryFormat;

struct Spec {
  int64_t num_features, num_per_group;
  double eps;
  bool centering;
  Layout layout;
};

using F = StableFacts;

Spec checked_spec(int64_t num_features, int64_t num_per_group, double eps, bool centering,
                  const std::string& layout_name) {
  const Layout layout = checks::layout<F>(layout_name);
  const bool from_input = num_features <= checks::kInputWidth;
  checks::options<F>(from_input ? num_per_group : num_features, num_per_group, eps, /*p=*/2.0);
  return {from_input ? checks::kInputWidth : num_features, num_per_group, eps, centering, layout};
}

Spec check_tensors(const Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias, Spec spec) {
  checks::input<F>(x, spec.layout, spec.num_features);  // the width too, when declared
  if (spec.num_features <= checks::kInputWidth) {
    spec.num_features = checks::width<F>(x, spec.layout, spec.num_features, spec.num_per_group);
  }
  if (weight.has_value()) checks::param<F>(*weight, "weight", x, spec.num_features);
  if (bias.has_value()) checks::param<F>(*bias, "bias", x, spec.num_features);
  return spec;
}

// Whether a 4-D tensor is laid out channels-last ([N, H, W, C] in memory), as
// LibTorch decides it: sizes of 1 take any stride.
bool channels_last(const Tensor& x) {
  if (x.dim() != 4) return false;
  int64_t expected = 1;
  for (int64_t d : {1, 3, 2, 0}) {
    if (x.size(d) != 1 && x.stride(d) != expected) return false;
    expected *= x.size(d);
  }
  return true;
}

struct KernelView {
  Tensor data;
  pln::cpu::Geometry geometry;
  MemoryFormat format;
};

KernelView kernel_view(const Tensor& x, const Spec& spec) {
  if (ops::reads_channels_last(spec.layout, [&] { return x.is_contiguous(); }, [&] { return channels_last(x); })) {
    return {x, ops::kernel_geometry(sizes_of(x), spec.layout, spec.num_features, spec.num_per_group, true),
            MemoryFormat::ChannelsLast};
  }
  return {torch::stable::contiguous(x),
          ops::kernel_geometry(sizes_of(x), spec.layout, spec.num_features, spec.num_per_group, false),
          MemoryFormat::Contiguous};
}

// The statistics' sizes: the input's, with the groups on the feature axis.
std::vector<int64_t> stats_sizes(const Tensor& x, const Spec& spec) {
  return F::stats_sizes(x, layouts::channel_axis(spec.layout), spec.num_features / spec.num_per_group).sizes;
}

Tensor empty(const std::vector<int64_t>& sizes, ScalarType type, const Tensor& like, MemoryFormat format) {
  return torch::stable::empty(sizes, type, std::nullopt, like.device(), std::nullopt, format);
}

// y, and the per-group mean and 1/std where save_stats (a backward follows).
std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& input, const OptionalTensor& weight,
                                           const OptionalTensor& bias, const Spec& spec, bool save_stats) {
  const KernelView view = kernel_view(input, spec);
  const ScalarType type = input.scalar_type(), stats = stats_type(type);
  Tensor y = empty(sizes_of(input), type, input, view.format);
  std::optional<Tensor> mean, rstd;
  if (save_stats) {
    mean = empty(stats_sizes(input, spec), stats, input, view.format);
    rstd = empty(stats_sizes(input, spec), stats, input, view.format);
  }
  const Tensor w = affine_or(weight, stats, input, spec.num_features, 1.0);
  const Tensor b = affine_or(bias, stats, input, spec.num_features, 0.0);
  with_stored_type(type, "pln::parallel_ln_forward", [&](auto s) {
    using S = decltype(s);
    pln::cpu::forward(view.geometry, stored<S>(view.data), computed<S>(w), computed<S>(b), stored<S>(y),
                      mean ? computed<S>(*mean) : nullptr, rstd ? computed<S>(*rstd) : nullptr, spec.eps,
                      spec.centering);
  });
  return {y, mean.value_or(y), rstd.value_or(y)};
}

// pln::parallel_ln_composite (registered in Python), through the dispatcher.
Tensor composite(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias, int64_t num_features,
                 int64_t num_per_group, double p, double eps, bool centering, const std::string& layout) {
  using torch::stable::detail::from;
  std::array<StableIValue, 10> stack{from(input), from(weight), from(bias), from(num_features), from(num_per_group),
                                     from(p), from(p), from(eps), from(centering), from(layout)};
  TORCH_ERROR_CODE_CHECK(
      torch_call_dispatcher("pln::parallel_ln_composite", "", stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

}  // namespace

Tensor parallel_ln(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias, int64_t num_features,
                   int64_t num_per_group, double eps, bool centering, std::string layout, double p) {
  if (p != 2.0 || !is_floating(input.scalar_type())) {
    return composite(input, weight, bias, num_features, num_per_group, p, eps, centering, layout);
  }
  const Spec spec =
      check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout));
  return std::get<0>(forward(input, weight, bias, spec, /*save_stats=*/false));
}

std::tuple<Tensor, Tensor, Tensor> parallel_ln_forward(const Tensor& input, const OptionalTensor& weight,
                                                       const OptionalTensor& bias, int64_t num_features,
                                                       int64_t num_per_group, double eps, bool centering,
                                                       std::string layout) {
  const Spec spec =
      check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout));
  return forward(input, weight, bias, spec, /*save_stats=*/true);
}

std::tuple<Tensor, Tensor, Tensor> parallel_ln_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& mean, const Tensor& rstd,
                                                        const OptionalTensor& weight, int64_t num_features,
                                                        int64_t num_per_group, double eps, bool centering,
                                                        std::string layout) {
  const Spec spec =
      check_tensors(input, weight, std::nullopt, checked_spec(num_features, num_per_group, eps, centering, layout));
  checks::backward<F>(grad_output, input, mean, rstd, spec.layout, spec.num_features, spec.num_per_group);
  const ScalarType type = input.scalar_type(), stats = stats_type(type);
  const KernelView view = kernel_view(input, spec);
  const Tensor dy = torch::stable::contiguous(grad_output, view.format);
  const Tensor m = torch::stable::contiguous(mean, view.format), r = torch::stable::contiguous(rstd, view.format);
  const Tensor w = affine_or(weight, stats, input, spec.num_features, 1.0);
  Tensor dx = empty(sizes_of(input), type, input, view.format);
  // Per-feature sums are accumulated in double whatever the input's dtype.
  Tensor dw = empty({spec.num_features}, ScalarType::Double, input, MemoryFormat::Contiguous);
  Tensor db = empty({spec.num_features}, ScalarType::Double, input, MemoryFormat::Contiguous);
  with_stored_type(type, "pln::parallel_ln_backward", [&](auto s) {
    using S = decltype(s);
    pln::cpu::backward(view.geometry, stored<S>(dy), stored<S>(view.data), computed<S>(m), computed<S>(r),
                       computed<S>(w), spec.centering, stored<S>(dx), static_cast<double*>(dw.data_ptr()),
                       static_cast<double*>(db.data_ptr()));
  });
  const ScalarType param_type = weight.has_value() ? weight->scalar_type() : type;
  return {dx, torch::stable::to(dw, param_type), torch::stable::to(db, param_type)};
}

}  // namespace pln::stable
