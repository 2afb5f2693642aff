#pragma once
// A training checkpoint: the network, the optimiser's state, the epoch
// counters and the per-epoch records so far, with the configuration that
// produced them. Written atomically at the end of every epoch, so a run killed
// at any moment resumes from its last finished epoch.

#include "common/config.h"

#include <torch/torch.h>

#include <filesystem>
#include <vector>

namespace pln::exp::vit {

struct TrainingState {
  int64_t epochs_done = 0;
  int64_t step = 0;              ///< optimiser steps taken
  int64_t images_seen = 0;
  double train_seconds = 0;      ///< in training steps, over every session
  double elapsed_seconds = 0;    ///< wall time of the run, over every session
  double best_top1 = 0;
  int64_t best_epoch = 0;
  std::vector<std::vector<double>> records;  ///< one row per finished epoch
};

void save_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, const TrainingState& state);

/// Loads `file` into the network, the optimiser and `state`. Throws
/// std::runtime_error naming the file when it is unreadable or corrupt, or
/// when it was written with another configuration (naming the keys that differ;
/// the device may differ: tensors load onto `device`, the network's).
void load_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, TrainingState& state, const torch::Device& device);

}  // namespace pln::exp::vit
