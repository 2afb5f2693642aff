#pragma once
// A training checkpoint: the network, the optimiser's state, the random
// generators' states, the loop's counters and every CSV log written so far,
// with the configuration that produced them. A safetensors file
// (records/safetensors.h): the tensors by name ("model.NAME" as in the
// network's state_dict, "optimizer.NAME.exp_avg", "last_finite.NAME"), and in
// its metadata the configuration and the training state as JSON. Reading one
// checks every field against this run before anything is built from it; the
// pickled checkpoint.pt of earlier versions is never loaded. Written atomically, so a run
// killed at any moment resumes from its last checkpoint and, on the same
// machine and thread count, ends with the same records as a run never
// interrupted. Every family's training loop keeps one (`--resume`).

#include "run/training_state.h"
#include "spec/config.h"
#include "spec/experiment.h"
#include "train/divergence_guard.h"

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

namespace pln::exp {

/// The checkpoint of one run, `checkpoint.safetensors` in its directory:
///
///   DivergenceGuard guard("name");
///   StateLayout layout{steps, 0, 0, {{"train.csv", {log.table().header}}}, {{"loss", {{StateField::kNumber}}}}};
///   Checkpointer checkpoints(context, config, *net, optimizer, guard, layout);
///   TrainingState state;
///   checkpoints.resume(state);           // with --resume, where it stopped
///   for (...; ++state.step) { ...; if (due) checkpoints.save(state); }
///
/// `generator`, when given, is the loop's own random generator; LibTorch's
/// default CPU generator is always kept, and so are the guard's last finite
/// parameters.
class Checkpointer {
 public:
  Checkpointer(const RunContext& context, const Config& config, torch::nn::Module& network,
               torch::optim::Optimizer& optimizer, DivergenceGuard& guard, StateLayout layout,
               at::Generator* generator = nullptr);
  /// With --resume and a checkpoint: loads it into everything (printing from
  /// which step) and returns true; `state` then holds exactly the logs and
  /// values the layout names, of their types. Otherwise removes any
  /// checkpoint, so that another configuration's is never resumed later, and
  /// returns false. Throws std::runtime_error naming the file and the field
  /// when it is unreadable or corrupt, does not match this run's tensors,
  /// optimiser, random generators or layout, holds a count beyond this run's
  /// sizes, or was written with another configuration (naming the keys that
  /// differ; the device and checkpoint_every may differ); and, with --resume,
  /// when the directory holds only an earlier version's checkpoint.pt.
  bool resume(TrainingState& state);
  /// Writes the checkpoint (numbers that are not finite as "nan", "inf" or
  /// "-inf", which resume reads back); throws SessionStopped when it is the
  /// session's `stop_after_checkpoints`-th, and std::runtime_error naming the
  /// file when its header would pass kMaxSafetensorsHeaderBytes.
  void save(const TrainingState& state);

 private:
  const RunContext& context_;
  const Config& config_;
  torch::nn::Module& network_;
  torch::optim::Optimizer& optimizer_;
  DivergenceGuard& guard_;
  StateLayout layout_;
  at::Generator* generator_;
  int64_t written_ = 0;
};

}  // namespace pln::exp
