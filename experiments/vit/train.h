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
#include "spec/schema.h"
#include "vit/model.h"

namespace pln::exp::vit {

/// The configuration of `pln vit`.
struct VitConfig {
  ImageDataConfig images;
  std::string size, norm, norm_sites, act, device, amp;
  int64_t width = 0, blocks = 0, heads = 0;  ///< 0: the size's
  int64_t patch = 0, mlp_ratio = 0, group = 0, epochs = 0, batch_size = 0, seed = 0;
  double drop_path = 0, weight_decay = 0, label_smoothing = 0, clip_grad = 0;
  Schedule schedule;
};

/// The keys `pln vit` takes: defaults, values, help, and the checks across
/// keys (the network's shape, norm_sites, amp).
const Schema<VitConfig>& schema();

/// The network options a configuration describes, for images of
/// (channels, size) and `classes` labels (0 for width, blocks or heads: the
/// size's). Throws std::invalid_argument, "vit: ...", when they do not fit.
ViTOptions network_options(const VitConfig& config, int64_t channels, int64_t size, int64_t classes);

/// Trains and evaluates; writes epochs.csv and checkpoint.safetensors into the run
/// directory (`record` is its config.json); returns the summary.
Config train_vit(const Config& record, const RunContext& context);

}  // namespace pln::exp::vit
