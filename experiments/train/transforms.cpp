#include "train/transforms.h"

namespace pln::exp {

std::pair<torch::Tensor, torch::Tensor> channel_stats(const torch::Tensor& images) {
  const auto x = images.to(torch::kFloat64) / 255.0;
  return {x.mean({0, 2, 3}), x.std({0, 2, 3}, /*unbiased=*/false)};
}

torch::Tensor normalise(const torch::Tensor& images, const torch::Tensor& mean, const torch::Tensor& std,
                        torch::Dtype dtype) {
  const auto x = images.to(torch::kFloat64) / 255.0;
  return ((x - mean.view({1, -1, 1, 1})) / std.view({1, -1, 1, 1}).clamp_min(1e-12)).to(dtype);
}

torch::Tensor augment(const torch::Tensor& batch, int64_t pad, torch::Generator& generator) {
  const int64_t B = batch.size(0), H = batch.size(2), W = batch.size(3);
  const auto padded = torch::constant_pad_nd(batch, {pad, pad, pad, pad}, 0);
  const auto offsets = torch::randint(0, 2 * pad + 1, {B, 2}, generator, torch::kInt64);
  const auto flips = torch::randint(0, 2, {B}, generator, torch::kInt64);
  auto out = torch::empty_like(batch);
  for (int64_t i = 0; i < B; ++i) {
    auto crop = padded[i].narrow(1, offsets[i][0].item<int64_t>(), H).narrow(2, offsets[i][1].item<int64_t>(), W);
    out[i].copy_(flips[i].item<int64_t>() ? crop.flip({2}) : crop);
  }
  return out;
}

}  // namespace pln::exp
