#pragma once
// Image classification training shared by `pln cnn` and `pln vgg`: data
// (clean or fixed random labels, subsets, normalisation, augmentation),
// SGD/Adam with the common schedules, per-epoch records, final metrics.

#include "common/experiment.h"

#include <torch/torch.h>

#include <functional>

namespace pln::exp::images {

/// Every key both image runners take, with their defaults.
Config image_defaults();

/// Builds the network for (in_channels, image_size, classes) from a configuration.
using NetworkBuilder =
    std::function<torch::nn::Sequential(const Config&, int64_t in_channels, int64_t image_size, int64_t classes)>;

/// Trains and evaluates; writes epochs.csv; returns the summary. `min_size`
/// pads smaller images with zeros (VGG needs 32 x 32).
Config train_classifier(const Config& config, const RunContext& context, const NetworkBuilder& build,
                        int64_t min_size, const std::string& experiment);

}  // namespace pln::exp::images
