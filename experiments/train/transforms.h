#pragma once
// What is done to images before a network sees them: normalisation by the
// training set's per-channel statistics, and the random crops and flips of
// `augment=true`.

#include <torch/torch.h>

#include <cstdint>
#include <utility>

namespace pln::exp {

/// Per-channel mean and standard deviation of uint8 images, over [0, 1] values.
std::pair<torch::Tensor, torch::Tensor> channel_stats(const torch::Tensor& images);
/// uint8 images to float, normalised with the given per-channel statistics.
torch::Tensor normalise(const torch::Tensor& images, const torch::Tensor& mean, const torch::Tensor& std,
                        torch::Dtype dtype = torch::kFloat32);

/// Random crop (zero padding `pad`) and horizontal flip of a float batch [B, C, H, W].
torch::Tensor augment(const torch::Tensor& batch, int64_t pad, torch::Generator& generator);

}  // namespace pln::exp
