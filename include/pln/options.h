#pragma once
// Options of the Parallel LN family, in the style of torch::nn::LayerNormOptions.

#include <pln/layout.h>
#include <torch/arg.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace pln {

std::string to_string(Layout layout);
/// Parses "nc", "ntc", "nchw", "nhwc" or "ncl" (case-insensitive).
Layout layout_from_string(const std::string& name);
/// Rank a tensor must have in `layout`.
int64_t layout_rank(Layout layout);
/// Index of the feature axis in `layout`.
int64_t layout_channel_axis(Layout layout);

namespace detail {
/// The layout `dim` names, or `layout` when set; throws c10::Error for any other dim.
Layout resolve_layout(int64_t dim, const std::optional<Layout>& layout);
/// Throws c10::Error naming the offending value if the grouping, eps or p is impossible.
void check_options(int64_t num_features, int64_t num_per_group, double eps, double p);
}  // namespace detail

/// TORCH_ARG for NormOptionsBase: the setter returns the derived options, so
/// that calls chain across shared and own arguments (PQNormOptions(8, 4).eps(1e-4).q(3)).
#define PLN_OPTIONS_ARG(T, name)                                             \
 public:                                                                    \
  Derived& name(const T& new_##name) {                                      \
    this->name##_ = new_##name;                                             \
    return static_cast<Derived&>(*this);                                    \
  }                                                                         \
  Derived& name(T&& new_##name) {                                           \
    this->name##_ = std::move(new_##name);                                  \
    return static_cast<Derived&>(*this);                                    \
  }                                                                         \
  const T& name() const noexcept { return this->name##_; }                  \
  T& name() noexcept { return this->name##_; }                              \
                                                                            \
 private:                                                                   \
  T name##_

/// What the options of every norm of the family hold: C features on the
/// feature axis in groups of g, eps, centering and affine; `kCenter` is
/// centering's default (the gated norms' is false: the RMS norms they
/// replace). A base in the way of torch::nn::ConvOptions: each setter returns
/// `Derived`.
template <typename Derived, bool kCenter = true>
struct GroupedOptionsBase {
  GroupedOptionsBase(int64_t num_features, int64_t num_per_group)
      : num_features_(num_features), num_per_group_(num_per_group) {}

  /// Number of features C on the feature axis.
  PLN_OPTIONS_ARG(int64_t, num_features);
  /// Features per group g; C must be a multiple of g. g = C is plain LN.
  PLN_OPTIONS_ARG(int64_t, num_per_group);
  /// Added to the group statistic before the root. Default 1e-5.
  PLN_OPTIONS_ARG(double, eps) = 1e-5;
  /// Subtract the group mean (PLN). false gives parallel layer scaling (PLS).
  PLN_OPTIONS_ARG(bool, centering) = kCenter;
  /// A learnable per-feature weight (ones initially), and a bias (zeros) but
  /// in the gated norms, whose `bias` says.
  PLN_OPTIONS_ARG(bool, affine) = true;

 public:
  int64_t num_groups() const { return num_features_ / num_per_group_; }
};

/// The options of the ungated modules: the grouping above, the layout and the
/// exponent p of the group statistic.
template <typename Derived>
struct NormOptionsBase : GroupedOptionsBase<Derived> {
  using GroupedOptionsBase<Derived>::GroupedOptionsBase;

  /// Layout as in the original module: 2 -> [N, C], 3 -> [N, T, C], 4 -> [N, C, H, W].
  PLN_OPTIONS_ARG(int64_t, dim) = 4;
  /// Exponent of the group statistic mean(|x - mu|^p); p = 2 is the paper's operator.
  PLN_OPTIONS_ARG(double, p) = 2.0;
  /// Explicit layout; overrides `dim` when set.
  PLN_OPTIONS_ARG(std::optional<Layout>, layout) = std::nullopt;

 public:
  /// The layout in force: `layout` if set, else the one `dim` names.
  Layout resolved_layout() const { return detail::resolve_layout(dim_, layout_); }
  /// Throws c10::Error naming the offending value if the options are impossible.
  void validate() const {
    detail::check_options(this->num_features(), this->num_per_group(), this->eps(), p_);
    resolved_layout();
  }
};
#undef PLN_OPTIONS_ARG

/// Options for pln::ParallelLN and pln::functional::parallel_ln.
///
///   pln::ParallelLN norm(pln::ParallelLNOptions(64, 8).dim(4));
struct ParallelLNOptions : NormOptionsBase<ParallelLNOptions> {
  using NormOptionsBase::NormOptionsBase;
};

/// Options of pln::GatedNorm and pln::functional::gated_norm: the grouping of
/// the last axis (centering false by default: PLS, an RMS norm per group;
/// affine: the module's weight), where the gate multiplies and its activation.
///
///   pln::GatedNorm norm(pln::GatedNormOptions(5120, 640).eps(1e-6));  // Mamba-2's
struct GatedNormOptions : GroupedOptionsBase<GatedNormOptions, /*kCenter=*/false> {
  using GroupedOptionsBase::GroupedOptionsBase;

  /// "before": norm(x * act(gate)) (Mamba-2); "after": norm(x) * act(gate) (Gated DeltaNet).
  TORCH_ARG(std::string, gate_position) = "before";
  /// "silu" or "sigmoid".
  TORCH_ARG(std::string, activation) = "silu";
  /// With `affine`, also a learnable per-feature bias (zeros initially); the models' classes have none.
  TORCH_ARG(bool, bias) = false;

 public:
  /// Throws c10::Error naming the offending value if the options are impossible.
  void validate() const;
};

/// Options for pln::PQNorm: y = sign(xc)|xc|^(p/q) / (mean|xc|^p + eps)^(1/q).
/// p = q = 2 is PLN (centering) or PLS (no centering).
struct PQNormOptions : NormOptionsBase<PQNormOptions> {
  using NormOptionsBase::NormOptionsBase;

  /// Root of the statistic and exponent p / q of the numerator.
  TORCH_ARG(double, q) = 2.0;

 public:
  void validate() const;
};

}  // namespace pln
