#pragma once
// `pln vit` training: AdamW with decoupled weight decay (not on biases, norms,
// the CLS token or the position embedding), linear warmup then cosine,
// optional label smoothing and gradient clipping, top-1 and top-5 test
// accuracy every epoch, a checkpoint at the end of every epoch.
//
// Every epoch draws its batch order and stochastic-depth masks from a seed
// derived from (seed, epoch), so a run resumed from its checkpoint takes the
// same steps as one never interrupted (same machine and thread count).

#include "common/experiment.h"
#include "vit/model.h"

#include <optional>

namespace pln::exp::vit {

/// Every key `pln vit` takes, with its default.
Config vit_defaults();

/// The network options a configuration describes, for images of
/// (channels, size) and `classes` labels. Throws std::invalid_argument naming the key.
ViTOptions options_from_config(const Config& config, int64_t channels, int64_t size, int64_t classes);

struct TrainControl {
  bool resume = false;            ///< continue from out/checkpoint.pt when there is one
  int64_t stop_after_epochs = 0;  ///< > 0: end this session after that many epochs, as if killed
};

/// Trains and evaluates; writes epochs.csv and checkpoint.pt into the run
/// directory. Returns the summary, or nothing when `stop_after_epochs` ended
/// the session first.
std::optional<Config> train_vit(const Config& config, const RunContext& context, const TrainControl& control);

}  // namespace pln::exp::vit
