#include "layout.h"

#include <c10/util/Exception.h>

#include "ops/aten_facts.h"
#include "ops/kernel_geometry.h"

namespace pln::detail {

void check_input(const torch::Tensor& x, Layout layout, int64_t num_features) {
  TORCH_CHECK(x.defined(), "pln: input tensor is undefined");
  layout_rank(layout);  // an error naming a value outside the enum
  checks::input<ops::AtenFacts>(x, layout, num_features);
}

bool param_type_fits(at::ScalarType param, at::ScalarType input) {
  return checks::param_type_fits<ops::AtenFacts>(param, input);
}

void check_param(const torch::Tensor& p, const char* name, const torch::Tensor& x,
                 int64_t num_features) {
  if (p.defined()) checks::param<ops::AtenFacts>(p, name, x, num_features);
}

void check_call(const torch::Tensor& x, const ParallelLNOptions& options, const torch::Tensor& weight,
                const torch::Tensor& bias) {
  options.validate();
  check_input(x, options.resolved_layout(), options.num_features());
  check_param(weight, "weight", x, options.num_features());
  check_param(bias, "bias", x, options.num_features());
}

c10::MemoryFormat output_format(const torch::Tensor& x, Layout layout) {
  return ops::reads_channels_last(layout, [&] { return x.is_contiguous(); },
                                  [&] { return x.is_contiguous(c10::MemoryFormat::ChannelsLast); })
             ? c10::MemoryFormat::ChannelsLast
             : c10::MemoryFormat::Contiguous;
}

KernelView kernel_view(const torch::Tensor& x, Layout layout, int64_t num_features,
                       int64_t num_per_group) {
  const auto format = output_format(x, layout);
  const bool channels_last = format == c10::MemoryFormat::ChannelsLast;
  return {channels_last ? x : x.contiguous(),
          ops::kernel_geometry(x.sizes(), layout, num_features, num_per_group, channels_last), format};
}

torch::Tensor conform(const torch::Tensor& t, const KernelView& view) {
  return t.contiguous(view.format);
}

}  // namespace pln::detail
