#pragma once
// The training loop of every classifier family (`pln cnn`, `pln vgg`, `pln
// vit`): shuffled mini-batches, optionally augmented; the shared learning-rate
// schedule; cross-entropy; the divergence guard; after every epoch a row of
// epochs.csv, the test accuracy and a checkpoint; top-1 (and top-5) accuracy
// at the end. A family gives its network, its optimiser and the few settings
// of ClassifierHooks and the keys of ClassifierTraining.

#include "spec/experiment.h"
#include "train/image_data.h"
#include "train/schedule.h"

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace pln::exp {

struct Accuracy {
  double top1 = 0, top5 = 0, loss = 0;  ///< loss: mean cross-entropy, without label smoothing
};

/// What the loop reads of a family's configuration (its schema has checked it).
struct ClassifierTraining {
  int64_t epochs = 1, batch_size = 1, seed = 0;
  bool amp = false;    ///< autocast to bfloat16 (on CUDA)
  Schedule schedule;   ///< warmup in steps; its total is the run's
};

struct ClassifierHooks {
  std::string experiment;  ///< the progress line's and the divergence message's name
  /// The optimiser over the network's parameters, at learning rate `lr`.
  std::function<std::unique_ptr<torch::optim::Optimizer>(torch::nn::Module& network, double lr)> optimizer;
  torch::nn::functional::CrossEntropyFuncOptions loss{};
  double clip_grad = 0;  ///< > 0: the gradients' norm is clipped to it
  /// When given, each epoch draws its batch order and LibTorch's default
  /// generator (dropout, stochastic depth) from this seed; otherwise one
  /// generator, seeded from `seed` + 1, draws for the whole run.
  std::function<uint64_t(int64_t epoch)> epoch_seed;
  bool top5 = false;     ///< epochs.csv reports test_top1 and test_top5 rather than test_acc
  /// When the run started: its `seconds` count the data's preparation too.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

struct ClassifierResult {
  Accuracy train, test;
  double best_top1 = 0;     ///< the best test top-1 of any epoch
  int64_t best_epoch = 0;
  double final_loss = 0;    ///< the last epoch's mean training loss (the evaluated one if that is not finite)
  int64_t epochs_done = 0, diverged_at = -1, n_params = 0;
  double seconds = 0, images_per_s = 0;
};

/// Trains `network` (whose forward is `forward`, on `context.device`) on
/// `data`; writes epochs.csv, and checkpoint.safetensors after every epoch, into the
/// run directory; with `context.resume`, continues from that checkpoint.
/// `config` is the run's record, which the checkpoint keeps.
ClassifierResult train_classifier(const ClassifierTraining& training, const Config& config,
                                  const RunContext& context, const PreparedImages& data,
                                  torch::nn::Module& network,
                                  const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                                  const ClassifierHooks& hooks);

}  // namespace pln::exp
