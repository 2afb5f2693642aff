#include "layout.h"

#include <c10/util/Exception.h>

namespace pln::detail {

void check_input(const torch::Tensor& x, Layout layout, int64_t num_features) {
  TORCH_CHECK(x.defined(), "pln: input tensor is undefined");
  TORCH_CHECK(at::isFloatingType(x.scalar_type()),
              "pln: expected a floating-point input, got dtype ", x.scalar_type());
  const int64_t rank = layout_rank(layout);
  // Sizes are read as SymInts: under torch.compile they may be symbolic.
  TORCH_CHECK(x.dim() == rank, "pln: layout ", to_string(layout), " expects a ", rank, "-D input ",
              layouts::shape_name(layout), ", got a ", x.dim(), "-D input of shape ", x.sym_sizes());
  const int64_t axis = layout_channel_axis(layout);
  if (num_features <= 0) return;  // the input's width: the caller checks it against the group
  TORCH_CHECK(x.sym_size(axis) == num_features, "pln: expected ", num_features,
              " features on axis ", axis, " of the ", to_string(layout), " input, got ",
              x.sym_size(axis), " (input shape ", x.sym_sizes(), ")");
}

bool param_type_fits(at::ScalarType param, at::ScalarType input) {
  if (param == input) return true;
  if (!at::isFloatingType(param)) return false;
  if (input == at::kHalf || input == at::kBFloat16) return param == at::kFloat;
  return c10::elementSize(param) < c10::elementSize(input);
}

void check_param(const torch::Tensor& p, const char* name, const torch::Tensor& x,
                 int64_t num_features) {
  if (!p.defined()) return;
  TORCH_CHECK(p.sym_numel() == num_features, "pln: ", name, " must have ", num_features,
              " elements (num_features), got ", p.sym_numel(), " (shape ", p.sym_sizes(), ")");
  TORCH_CHECK(param_type_fits(p.scalar_type(), x.scalar_type()), "pln: ", name, " has dtype ", p.scalar_type(),
              " but the input has dtype ", x.scalar_type(), " (the parameters take the input's dtype, float32 "
              "with a float16 or bfloat16 input, or a narrower floating type, which is widened)");
  TORCH_CHECK(p.device() == x.device(), "pln: ", name, " is on ", p.device(),
              " but the input is on ", x.device());
}

void check_call(const torch::Tensor& x, const ParallelLNOptions& options, const torch::Tensor& weight,
                const torch::Tensor& bias) {
  options.validate();
  check_input(x, options.resolved_layout(), options.num_features());
  check_param(weight, "weight", x, options.num_features());
  check_param(bias, "bias", x, options.num_features());
}

torch::Tensor features_last(const torch::Tensor& x, Layout layout) {
  switch (layout) {
    case Layout::kNCHW: return x.permute({0, 2, 3, 1});
    case Layout::kNCL: return x.permute({0, 2, 1});
    default: return x;
  }
}

torch::Tensor features_restore(const torch::Tensor& y, Layout layout) {
  switch (layout) {
    case Layout::kNCHW: return y.permute({0, 3, 1, 2});
    case Layout::kNCL: return y.permute({0, 2, 1});
    default: return y;
  }
}

std::vector<int64_t> param_shape(Layout layout, int64_t num_features) {
  std::vector<int64_t> shape(static_cast<size_t>(layout_rank(layout)), 1);
  shape[static_cast<size_t>(layout_channel_axis(layout))] = num_features;
  return shape;
}

c10::MemoryFormat output_format(const torch::Tensor& x, Layout layout) {
  return layout == Layout::kNCHW && !x.is_contiguous() &&
                 x.is_contiguous(c10::MemoryFormat::ChannelsLast)
             ? c10::MemoryFormat::ChannelsLast
             : c10::MemoryFormat::Contiguous;
}

KernelView kernel_view(const torch::Tensor& x, Layout layout, int64_t num_features,
                       int64_t num_per_group) {
  const int64_t axis = layout_channel_axis(layout);
  if (output_format(x, layout) == c10::MemoryFormat::ChannelsLast) {
    // Channels-last storage is NHWC in memory: the groups are contiguous.
    const int64_t positions = x.numel() / num_features;
    return {x, {positions, num_features, 1, num_per_group}, c10::MemoryFormat::ChannelsLast};
  }
  torch::Tensor data = x.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  return {data, {outer, num_features, inner, num_per_group}, c10::MemoryFormat::Contiguous};
}

torch::Tensor conform(const torch::Tensor& t, const KernelView& view) {
  return t.contiguous(view.format);
}

}  // namespace pln::detail
