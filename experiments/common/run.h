#pragma once
// One run of an experiment: resolve the configuration, write config.json, log
// it, train, then write summary.json. A run directory holding summary.json is
// complete; one without it was interrupted or failed.

#include "common/experiment.h"

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

struct RunRequest {
  std::string preset = "smoke";
  std::vector<std::string> sets;   ///< key=value overrides, applied in order
  std::filesystem::path out;
  int threads = 0;                 ///< 0: all cores
  bool resume = false;             ///< continue from the run's checkpoint (resumable experiments)
};

/// The preset with the overrides applied; throws std::invalid_argument naming
/// the preset, key or value at fault.
Config resolve_config(const Experiment& experiment, const std::string& preset,
                      const std::vector<std::string>& sets);

/// Runs one configuration and returns its summary (also in out/summary.json).
Config run_experiment(const Experiment& experiment, const RunRequest& request);

/// `git describe --always --dirty` of the checkout this program was built
/// from, read once when first asked; "unknown" outside a checkout.
std::string source_revision();

/// Threads to use for a request of `requested` (0: every core).
int resolve_threads(int requested);

}  // namespace pln::exp
