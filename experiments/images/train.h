#pragma once
// What `pln cnn` and `pln vgg` share beyond the classifier loop of
// train/classifier.h: their key table, SGD or Adam, and their summary.

#include "train/classifier.h"
#include "spec/experiment.h"
#include "images/models.h"

#include <torch/torch.h>

#include <functional>

namespace pln::exp::images {

/// The key table of `pln cnn` and `pln vgg` (named `family`): the same keys,
/// with the family's defaults of width, group and lr; checks that pln and pls
/// groups divide the width and that amp=bf16 runs on CUDA, then `check`.
KeyTable key_table(const std::string& family, int64_t width, int64_t group, double lr, const KeyTable::Check& check = {});

/// Builds the network with `spec`'s blocks for (in_channels, image_size, classes).
using NetworkBuilder = std::function<torch::nn::Sequential(const BlockSpec& spec, int64_t in_channels,
                                                           int64_t image_size, int64_t classes)>;

/// Builds the network from the keys norm, group, act and axis, initialises
/// it (init_scale, bias_init), trains and evaluates; writes epochs.csv and
/// checkpoint.pt; returns the summary. `min_size` pads smaller images with
/// zeros (VGG needs 32 x 32). `experiment` names the progress line.
Config run_classifier(const Config& config, const RunContext& context, const NetworkBuilder& build,
                      int64_t min_size, const std::string& experiment);

}  // namespace pln::exp::images
