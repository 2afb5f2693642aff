#pragma once
// What `pln cnn` and `pln vgg` share beyond the classifier loop of
// train/classifier.h: their configuration, SGD or Adam, and their summary.

#include "train/classifier.h"
#include "spec/experiment.h"
#include "spec/schema.h"
#include "images/models.h"

#include <torch/torch.h>

#include <functional>

namespace pln::exp::images {

/// The configuration of `pln cnn` and `pln vgg`.
struct ImagesConfig {
  ImageDataConfig images;
  BlockSpec block;        ///< norm, group, act, axis
  int64_t width = 0, depth = 0;  ///< depth: cnn's conv blocks per stage
  int64_t epochs = 0, batch_size = 0, seed = 0;
  std::string optimizer, device, amp;
  Schedule schedule;
  double momentum = 0, weight_decay = 0, init_scale = 1, bias_init = 0;
};

/// The schema of `pln cnn` and `pln vgg` (named `family`): the same keys,
/// with the family's defaults of width, group and lr; checks that pln and pls
/// groups divide the width and that amp=bf16 runs on CUDA, then `check`.
Schema<ImagesConfig> schema(const std::string& family, int64_t width, int64_t group, double lr,
                            const Schema<ImagesConfig>::Check& check = {});

/// Builds the network with `spec`'s blocks for (in_channels, image_size, classes).
using NetworkBuilder = std::function<torch::nn::Sequential(const BlockSpec& spec, int64_t in_channels,
                                                           int64_t image_size, int64_t classes)>;

/// Builds the network with `config.block`, initialises it (init_scale,
/// bias_init), trains and evaluates; writes epochs.csv and checkpoint.safetensors;
/// returns the summary. `record` is the run's config.json. `min_size` pads
/// smaller images with zeros (VGG needs 32 x 32). `experiment` names the
/// progress line.
Config run_classifier(const ImagesConfig& config, const Config& record, const RunContext& context,
                      const NetworkBuilder& build, int64_t min_size, const std::string& experiment);

}  // namespace pln::exp::images
