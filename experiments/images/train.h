#pragma once
// What `pln cnn` and `pln vgg` share beyond the classifier loop of
// train/classifier.h: their keys, SGD or Adam, and their summary.

#include "train/classifier.h"
#include "spec/experiment.h"
#include "images/models.h"

#include <torch/torch.h>

#include <functional>

namespace pln::exp::images {

/// Every key both image runners take, with their defaults.
Config image_defaults();

/// Builds the network with `spec`'s blocks for (in_channels, image_size, classes).
using NetworkBuilder = std::function<torch::nn::Sequential(const BlockSpec& spec, int64_t in_channels,
                                                           int64_t image_size, int64_t classes)>;

/// Builds the network from the keys norm, group, act and axis, initialises
/// it (init_scale, bias_init), trains and evaluates; writes epochs.csv and
/// checkpoint.pt; returns the summary. `min_size` pads smaller images with
/// zeros (VGG needs 32 x 32).
Config run_classifier(const Config& config, const RunContext& context, const NetworkBuilder& build,
                      int64_t min_size, const std::string& experiment);

}  // namespace pln::exp::images
