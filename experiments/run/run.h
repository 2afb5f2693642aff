#pragma once
// One run of an experiment: resolve the configuration, write config.json, log
// it, train, then write summary.json. A run directory holding summary.json is
// complete; one without it was interrupted or failed.

#include "records/file_lock.h"
#include "spec/experiment.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pln::exp {

struct RunRequest {
  std::string preset = "smoke";
  std::vector<std::string> sets;   ///< key=value overrides, applied in order
  std::filesystem::path out;
  int threads = 0;                 ///< 0: all cores
  bool resume = false;             ///< continue from the run's checkpoint (resumable experiments)
  bool force = false;              ///< replace a finished run of another family or configuration in `out`
};

/// A run's hold on its directory, taken before anything is written there:
/// the claim (one process per directory, see claim_run) and what became of a
/// finished run the directory held. A finished run is never deleted before
/// the new one is: it waits in `set_aside` until finish() is called.
struct RunDirectory {
  FileLock claim;
  std::optional<Config> finished;  ///< summary.json of this same configuration's finished run, with `resume`
  std::filesystem::path set_aside; ///< where the finished run being replaced waits; empty when none
  /// Deletes the finished run set aside: the new one is complete.
  void finish();
};

/// Claims `out` (creating it) for a run of `experiment` with the resolved
/// `config`. When `out` holds a finished run (summary.json): with `resume` and
/// the same family and configuration, nothing is to be done and `finished`
/// holds its summary; of the same family and configuration otherwise, or with
/// `force`, its files are set aside (out/.replaced) until the new run
/// finishes; of another family or configuration without `force`, throws
/// std::invalid_argument naming the directory, the keys that differ and what
/// --force would do. A finished run already in out/.replaced (its replacement
/// was stopped) counts as the directory's; a fresh start then clears what the
/// stopped replacement left. Stale temporary files are removed.
RunDirectory take_run_directory(const std::filesystem::path& out, const std::string& experiment,
                                const Config& config, bool resume, bool force);

/// The preset with the overrides applied, validated by the family's key table
/// (each key's type, range and values, and the family's checks across keys);
/// throws std::invalid_argument naming the preset, key or value at fault.
Config resolve_config(const Experiment& experiment, const std::string& preset,
                      const std::vector<std::string>& sets);

/// Runs one configuration and returns its summary (also in out/summary.json).
Config run_experiment(const Experiment& experiment, const RunRequest& request);

/// Writes out/config.json, the record of a run, as every run (and `pln demo`)
/// writes it: the experiment's name, the preset, the overrides `sets`, the
/// threads, the source revision, LibTorch's version, the CPU kernels and the
/// BLAS, the device (when `config` has a `device` key) and, under "config",
/// the resolved configuration. Returns the record.
Config write_run_config(const std::filesystem::path& out, const std::string& experiment,
                        const std::string& preset, const std::vector<std::string>& sets, int threads,
                        const Config& config);

/// Writes out/summary.json, which marks the run finished: {"experiment": name}
/// then the summary's keys, a number that is not finite written as the string
/// "inf", "-inf" or "nan" (see non_finite_as_text). Returns the document.
Config write_summary(const std::filesystem::path& out, const std::string& experiment, const Config& summary);

/// The most threads (or grid workers) a run takes per CPU: more only share
/// the cores, while each costs a stack and the OpenMP pool spins them.
constexpr int kMaxThreadsPerCpu = 4;

/// Threads to use for a request of `requested` (0: every core); throws
/// std::invalid_argument stating the range for a negative request or one over
/// kMaxThreadsPerCpu threads per CPU.
int resolve_threads(int requested);

}  // namespace pln::exp
