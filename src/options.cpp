#include <pln/options.h>

#include <c10/util/Exception.h>


namespace pln {

std::string to_string(Layout layout) {
  TORCH_CHECK(layouts::rank(layout) > 0, "pln: unknown layout value ", static_cast<int>(layout));
  return layouts::name(layout);
}

Layout layout_from_string(const std::string& name) {
  const auto layout = layouts::parse(name);
  TORCH_CHECK(layout, "pln: unknown layout '", name, "'; expected one of nc, ntc, nchw, nhwc, ncl");
  return *layout;
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
  TORCH_CHECK(num_features > 0, "pln: num_features must be positive, got ", num_features);
  TORCH_CHECK(num_per_group > 0, "pln: num_per_group must be positive, got ", num_per_group);
  TORCH_CHECK(num_features % num_per_group == 0, "pln: num_features (", num_features,
              ") must be divisible by num_per_group (", num_per_group, ")");
  TORCH_CHECK(eps >= 0.0, "pln: eps must be >= 0, got ", eps);  // also rejects NaN
  TORCH_CHECK(p >= 1.0, "pln: p must be >= 1, got ", p);
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
