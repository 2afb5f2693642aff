#pragma once
// Options of the Parallel LN family, in the style of torch::nn::LayerNormOptions.

#include <torch/arg.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace pln {

/// Where the feature (channel) axis is, declared by the caller, never guessed
/// from sizes. `dim` of the original module picks kNC (2), kNTC (3) or kNCHW (4);
/// the other two are reached through the `layout` override.
enum class Layout {
  kNC,    ///< [N, C]          (MLP batch)
  kNTC,   ///< [N, T, C]       (tokens, features last)
  kNCHW,  ///< [N, C, H, W]    (normalised per pixel along axis 1)
  kNHWC,  ///< [N, H, W, C]    (channels-last data stored as such)
  kNCL,   ///< [N, C, L]       (sequences, channels first)
};

std::string to_string(Layout layout);
/// Parses "nc", "ntc", "nchw", "nhwc" or "ncl" (case-insensitive).
Layout layout_from_string(const std::string& name);
/// Rank a tensor must have in `layout`.
int64_t layout_rank(Layout layout);
/// Index of the feature axis in `layout`.
int64_t layout_channel_axis(Layout layout);

/// Options for pln::ParallelLN and pln::functional::parallel_ln.
///
///   pln::ParallelLN norm(pln::ParallelLNOptions(64, 8).dim(4));
struct ParallelLNOptions {
  ParallelLNOptions(int64_t num_features, int64_t num_per_group);

  /// Number of features C on the feature axis.
  TORCH_ARG(int64_t, num_features);
  /// Features per group g; C must be a multiple of g. g = C is plain LN.
  TORCH_ARG(int64_t, num_per_group);
  /// Added to the group statistic before the root. Default 1e-5.
  TORCH_ARG(double, eps) = 1e-5;
  /// Subtract the group mean (PLN). false gives parallel layer scaling (PLS).
  TORCH_ARG(bool, centering) = true;
  /// Learnable per-feature weight and bias (ones and zeros initially).
  TORCH_ARG(bool, affine) = true;
  /// Layout as in the original module: 2 -> [N, C], 3 -> [N, T, C], 4 -> [N, C, H, W].
  TORCH_ARG(int64_t, dim) = 4;
  /// Exponent of the group statistic mean(|x - mu|^p); p = 2 is the paper's operator.
  TORCH_ARG(double, p) = 2.0;
  /// Explicit layout; overrides `dim` when set.
  TORCH_ARG(std::optional<Layout>, layout) = std::nullopt;


 public:
  /// The layout in force: `layout` if set, else the one `dim` names.
  Layout resolved_layout() const;
  int64_t num_groups() const { return num_features_ / num_per_group_; }
  /// Throws c10::Error naming the offending value if the options are impossible.
  void validate() const;
};

/// Options for pln::PQNorm: y = sign(xc)|xc|^(p/q) / (mean|xc|^p + eps)^(1/q).
/// p = q = 2 is PLN (centering) or PLS (no centering).
struct PQNormOptions {
  PQNormOptions(int64_t num_features, int64_t num_per_group);

  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(int64_t, num_per_group);
  TORCH_ARG(double, p) = 2.0;
  TORCH_ARG(double, q) = 2.0;
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, centering) = true;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(int64_t, dim) = 4;
  TORCH_ARG(std::optional<Layout>, layout) = std::nullopt;

 public:
  Layout resolved_layout() const;
  int64_t num_groups() const { return num_features_ / num_per_group_; }
  void validate() const;
};

}  // namespace pln
