#pragma once
// `pln vit` training, through the classifier loop of train/classifier.h:
// AdamW with decoupled weight decay (not on biases, norms, the CLS token or
// the position embedding), the shared schedule (linear warmup over `warmup`
// steps, then cosine by default), optional label smoothing and gradient
// clipping, top-1 and top-5 test accuracy every epoch.
//
// Every epoch draws its batch order and stochastic-depth masks from a seed
// derived from (seed, epoch).

#include "train/classifier.h"
#include "spec/experiment.h"
#include "vit/model.h"

namespace pln::exp::vit {

/// The keys `pln vit` takes: defaults, values, help, and the checks across
/// keys (the network's shape, norm_sites, amp).
KeyTable key_table();

/// The network options a configuration describes, for images of
/// (channels, size) and `classes` labels (0 for width, blocks or heads: the
/// size's). Throws std::invalid_argument, "vit: ...", when they do not fit.
ViTOptions options_from_config(const Config& config, int64_t channels, int64_t size, int64_t classes);

/// Trains and evaluates; writes epochs.csv and checkpoint.pt into the run
/// directory; returns the summary.
Config train_vit(const Config& config, const RunContext& context);

}  // namespace pln::exp::vit
