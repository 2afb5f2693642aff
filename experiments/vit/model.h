#pragma once
// A minimal Vision Transformer whose every norm site takes LN, PLN(g), PLS(g)
// or nothing:
//
//   images [N, C_in, H, W]
//   -> Conv2d(C_in, width, patch, stride patch)      patch embedding, T = (H / patch)^2
//   -> [CLS; tokens] + learned position embedding     [N, T + 1, width]
//   -> blocks x { x += DropPath(Attention(Norm_attn(x)))
//                 x += DropPath(Linear(Act(Linear(Norm_mlp(x))))) }   MLP 4 x width wide
//   -> Norm_final(CLS token) -> Linear(width, classes)
//
// PLN acts on the feature axis of the [N, T, C] tokens (dim = 3). Norms act on
// each token alone, so the final norm is applied to the CLS token only, which
// is what the head reads.

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pln::exp::vit {

/// The norm of one site: ln | pln | pls | none; `group` features per group for pln and pls.
struct NormChoice {
  std::string kind = "ln";
  int64_t group = 8;
};

/// The three norm sites of the network.
struct NormSites {
  NormChoice attn;   ///< before each attention
  NormChoice mlp;    ///< before each MLP
  NormChoice final;  ///< after the last block
};

/// Every site takes `norm`, except those `sites` names: "" or a comma
/// separated list of site:kind, sites attn | mlp | final (e.g. "final:ln").
/// Throws std::invalid_argument naming the entry at fault.
NormSites parse_norm_sites(const std::string& norm, int64_t group, const std::string& sites);
std::string to_string(const NormChoice& choice);

struct ViTOptions {
  int64_t image_size = 28;
  int64_t in_channels = 1;
  int64_t classes = 10;
  int64_t patch = 7;
  int64_t width = 128;
  int64_t blocks = 4;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  NormSites norms;
  std::string act = "gelu";  ///< gelu | relu | silu | sat | none
  double drop_path = 0.0;    ///< stochastic depth rate of the last block; linear from 0 over blocks
};

/// (width, blocks, heads) of a named size: micro (128, 4, 4), tiny (192, 12, 3),
/// small (384, 12, 6). Throws std::invalid_argument listing the sizes.
struct SizeDefaults {
  int64_t width, blocks, heads;
};
SizeDefaults size_defaults(const std::string& size);

/// Throws std::invalid_argument naming the option at fault (a group that does
/// not divide the width, heads that do not, a patch that does not tile the image...).
void validate(const ViTOptions& options);

/// The module of one norm site over `width` features.
torch::nn::AnyModule make_norm(const NormChoice& choice, int64_t width);

/// Multi-head self-attention over all tokens, no mask: one qkv projection with
/// bias, softmax(q k^T / sqrt(d)) v per head, an output projection.
class SelfAttentionImpl : public torch::nn::Cloneable<SelfAttentionImpl> {
 public:
  SelfAttentionImpl(int64_t width, int64_t heads);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  /// [N, T, width] -> [N, T, width]
  torch::Tensor forward(const torch::Tensor& x);

  int64_t width, heads;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(SelfAttention);

/// One pre-norm transformer block.
class BlockImpl : public torch::nn::Cloneable<BlockImpl> {
 public:
  BlockImpl(const ViTOptions& options, double drop_path);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& x);

  ViTOptions options;
  double drop_path;
  torch::nn::AnyModule norm_attn, norm_mlp, act;
  SelfAttention attention{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Block);

class VisionTransformerImpl : public torch::nn::Cloneable<VisionTransformerImpl> {
 public:
  explicit VisionTransformerImpl(const ViTOptions& options);
  void reset() override;
  /// Linear weights and the position embedding ~ N(0, 0.02^2) clamped to 2 sigma,
  /// biases and the CLS token zero, norms at identity, the patch embedding as
  /// PyTorch initialises a Conv2d.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  /// [N, C_in, H, W] -> logits [N, classes]
  torch::Tensor forward(const torch::Tensor& images);

  ViTOptions options;
  torch::nn::Conv2d patch_embed{nullptr};
  torch::Tensor cls_token, pos_embed;
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::AnyModule norm;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(VisionTransformer);

/// Zeroes a random subset of samples (rate `p`) and scales the rest by
/// 1 / (1 - p), in training only: the residual branch of a dropped sample is skipped.
torch::Tensor drop_path(const torch::Tensor& x, double p, bool training);

}  // namespace pln::exp::vit
