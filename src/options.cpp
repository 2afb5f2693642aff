#include <pln/options.h>

#include <c10/util/Exception.h>

#include "ops/aten_facts.h"


namespace pln {

std::string to_string(Layout layout) {
  TORCH_CHECK(layouts::rank(layout) > 0, "pln: unknown layout value ", static_cast<int>(layout));
  return layouts::name(layout);
}

Layout layout_from_string(const std::string& name) {
  return checks::layout<ops::AtenFacts>(name);
}

int64_t layout_rank(Layout layout) {
  TORCH_CHECK(layouts::rank(layout) > 0, "pln: unknown layout value ", static_cast<int>(layout));
  return layouts::rank(layout);
}

int64_t layout_channel_axis(Layout layout) {
  layout_rank(layout);  // an error for a value outside the enum
  return layouts::channel_axis(layout);
}

namespace detail {

Layout resolve_layout(int64_t dim, const std::optional<Layout>& layout) {
  if (layout) return *layout;
  switch (dim) {
    case 2: return Layout::kNC;
    case 3: return Layout::kNTC;
    case 4: return Layout::kNCHW;
    default:
      TORCH_CHECK(false, "pln: dim must be 2 ([N, C]), 3 ([N, T, C]) or 4 ([N, C, H, W]), got ",
                  dim);
  }
}

void check_options(int64_t num_features, int64_t num_per_group, double eps, double p) {
  checks::options<ops::AtenFacts>(num_features, num_per_group, eps, p);
}

}  // namespace detail

void PQNormOptions::validate() const {
  NormOptionsBase::validate();
  TORCH_CHECK(q_ >= 1.0, "pln: q must be >= 1, got ", q_);
}

void GatedNormOptions::validate() const {
  detail::check_options(num_features(), num_per_group(), eps(), 2.0);
  TORCH_CHECK(gate_position_ == "before" || gate_position_ == "after",
              "pln: gate_position must be \"before\" or \"after\" (the norm), got \"", gate_position_, "\"");
  TORCH_CHECK(activation_ == "silu" || activation_ == "sigmoid",
              "pln: activation must be \"silu\" or \"sigmoid\", got \"", activation_, "\"");
}

}  // namespace pln
