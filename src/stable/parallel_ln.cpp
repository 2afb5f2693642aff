// pln::parallel_ln_forward and pln::parallel_ln_backward on the CPU, over the
// stable ABI: the checks of libpln's (src/ops/common.cpp, src/layout.cpp,
// with its messages), the kernels' view of the input, and src/cpu/'s kernels.
// The other dispatch keys of these ops, and the ops around them, are
// registered in Python (python/pln/_stable_ops.py).

#include "stable/ops.h"
#include "stable/tensors.h"

#include <pln/layout.h>

#include "cpu/kernels.h"

#include <array>
#include <cmath>
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

Spec checked_spec(int64_t num_features, int64_t num_per_group, double eps, bool centering,
                  const std::string& layout_name) {
  const auto layout = layouts::parse(layout_name);
  check(layout.has_value(), "pln: unknown layout '", layout_name, "'; expected one of nc, ntc, nchw, nhwc, ncl");
  const bool from_input = num_features <= 0;
  const int64_t declared = from_input ? num_per_group : num_features;
  check(declared > 0, "pln: num_features must be positive, got ", declared);
  check(num_per_group > 0, "pln: num_per_group must be positive, got ", num_per_group);
  check(declared % num_per_group == 0, "pln: num_features (", declared, ") must be divisible by num_per_group (",
        num_per_group, ")");
  check(eps >= 0.0, "pln: eps must be >= 0, got ", eps);
  return {from_input ? 0 : num_features, num_per_group, eps, centering, *layout};
}

void check_param(const OptionalTensor& p, const char* name, const Tensor& x, int64_t num_features) {
  if (!p.has_value()) return;
  check(p->numel() == num_features, "pln: ", name, " must have ", num_features, " elements (num_features), got ",
        p->numel(), " (shape ", shape_text(*p), ")");
  const ScalarType pt = p->scalar_type(), xt = x.scalar_type();
  const bool fits = pt == xt || (is_floating(pt) && ((xt == ScalarType::Half || xt == ScalarType::BFloat16)
                                                         ? pt == ScalarType::Float
                                                         : p->element_size() < x.element_size()));
  check(fits, "pln: ", name, " has dtype ", dtype_text(pt), " but the input has dtype ", dtype_text(xt),
        " (the parameters take the input's dtype, float32 with a float16 or bfloat16 input, or a narrower floating "
        "type, which is widened)");
  check(same_device(*p, x), "pln: ", name, " is on ", device_text(*p), " but the input is on ", device_text(x));
}

Spec check_tensors(const Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias, Spec spec) {
  check(is_floating(x.scalar_type()), "pln: expected a floating-point input, got dtype ", dtype_text(x.scalar_type()));
  const int64_t rank = layouts::rank(spec.layout), axis = layouts::channel_axis(spec.layout);
  check(x.dim() == rank, "pln: layout ", layouts::name(spec.layout), " expects a ", rank, "-D input ",
        layouts::shape_name(spec.layout), ", got a ", x.dim(), "-D input of shape ", shape_text(x));
  const int64_t width = x.size(axis);
  if (spec.num_features <= 0) {
    check(width > 0 && width % spec.num_per_group == 0, "pln: the input's width, ", width, " features on axis ", axis,
          " of the ", layouts::name(spec.layout), " input (num_features = ", spec.num_features,
          ": the input's width), is not a whole number of groups of num_per_group = ", spec.num_per_group,
          " features; a shard of the features must hold whole groups (input shape ", shape_text(x), ")");
    spec.num_features = width;
  }
  check(width == spec.num_features, "pln: expected ", spec.num_features, " features on axis ", axis, " of the ",
        layouts::name(spec.layout), " input, got ", width, " (input shape ", shape_text(x), ")");
  check_param(weight, "weight", x, spec.num_features);
  check_param(bias, "bias", x, spec.num_features);
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

// The memory format of every output shaped like x (the kernels' order).
MemoryFormat output_format(const Tensor& x, Layout layout) {
  return layout == Layout::kNCHW && !x.is_contiguous() && channels_last(x) ? MemoryFormat::ChannelsLast
                                                                           : MemoryFormat::Contiguous;
}

struct KernelView {
  Tensor data;
  pln::cpu::Geometry geometry;
  MemoryFormat format;
};

KernelView kernel_view(const Tensor& x, const Spec& spec) {
  const int64_t axis = layouts::channel_axis(spec.layout);
  if (output_format(x, spec.layout) == MemoryFormat::ChannelsLast) {
    return {x, {x.numel() / spec.num_features, spec.num_features, 1, spec.num_per_group}, MemoryFormat::ChannelsLast};
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  return {torch::stable::contiguous(x), {outer, spec.num_features, inner, spec.num_per_group},
          MemoryFormat::Contiguous};
}

std::vector<int64_t> stats_sizes(const Tensor& x, const Spec& spec) {
  auto sizes = sizes_of(x);
  sizes[static_cast<size_t>(layouts::channel_axis(spec.layout))] = spec.num_features / spec.num_per_group;
  return sizes;
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
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&grad_output, "grad_output"},
                                {&mean, "mean"},
                                {&rstd, "rstd"}}) {
    check(same_device(*t, input), "pln::parallel_ln_backward: ", name, " is on ", device_text(*t),
          " but the input is on ", device_text(input));
  }
  check(sizes_of(grad_output) == sizes_of(input), "pln::parallel_ln_backward: grad_output has shape ",
        shape_text(grad_output), " but the input has shape ", shape_text(input));
  check(grad_output.scalar_type() == input.scalar_type(), "pln::parallel_ln_backward: grad_output has dtype ",
        dtype_text(grad_output.scalar_type()), " but the input has dtype ", dtype_text(input.scalar_type()));
  const ScalarType type = input.scalar_type(), stats = stats_type(type);
  const auto expected = stats_sizes(input, spec);
  for (const Tensor* s : {&mean, &rstd}) {
    check(sizes_of(*s) == expected && s->scalar_type() == stats,
          "pln::parallel_ln_backward: expected the forward's statistics, ", dtype_text(stats), " of shape ",
          shape_text(expected), ", got shape ", shape_text(*s),
          " and dtype ", dtype_text(s->scalar_type()));
  }
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
