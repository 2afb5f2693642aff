#pragma once
// The demo: one-hidden-layer networks whose only nonlinearity is a
// normalisation (LN-Net, PLN-Net) and a Tanh reference net, fitted to
// cos(3 pi x) on [-1, 1]. An LN-Net has at most one interior stationary point,
// so it cannot follow three oscillations whatever its width; a PLN-Net can.
//
// `pln demo --out DIR` keeps the records every run keeps (run/run.h):
// config.json, summary.json (experiment "demo"), models.csv (one row per
// network) and fit.csv (every network on the test grid), which `pln plot` and
// `pln validate --check` read as they read a family's run. The demo is no
// family (demo_experiment() is not in experiments()): it has no presets or
// grids, and its options are the command's flags.

#include "spec/config.h"
#include "spec/experiment.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pln::exp {

struct DemoConfig {
  int64_t steps = 3000;
  std::vector<int64_t> widths = {64, 512};
  int64_t group = 4;           ///< features per PLN group
  int64_t train_points = 256;  ///< evenly spaced on [-1, 1]
  int64_t test_points = 1001;  ///< evenly spaced on [-1, 1]
  double lr = 3e-3;            ///< Adam, cosine-decayed to lr / 100
  uint64_t seed = 0;
  std::string device = "cpu";  ///< cpu, cuda or cuda:N
};

struct DemoResult {
  std::string model;  ///< "LN-Net", "PLN(4)-Net", "Tanh-Net"
  int64_t width = 0;
  double max_error = 0;    ///< L-infinity error on the test grid
  double rel_l2 = 0;       ///< ||f - f*|| / ||f*|| on the test grid
  double final_loss = 0;   ///< training MSE at the last step
  double seconds = 0;
  std::vector<double> fit;  ///< the network on the test grid
};

/// Validates the configuration; throws std::invalid_argument naming the field.
void validate(const DemoConfig& config);

/// The configuration as config.json records it: every field, and the schedule
/// the demo trains with (cosine from lr to lr / 100, no warmup; train/schedule.h keys).
Config to_config(const DemoConfig& config);

/// `key=value` for every key of `config` that differs from the defaults: the
/// flags that reproduce the run.
std::vector<std::string> demo_overrides(const DemoConfig& config);

/// Trains every model of the demo; `on_done` (optional) sees each result as it
/// finishes. Throws std::runtime_error naming the model if its loss stops being finite.
std::vector<DemoResult> run_demo(const DemoConfig& config,
                                 const std::function<void(const DemoResult&)>& on_done = {});

/// The metrics of summary.json: the smallest max error of the LN-Nets, the
/// largest of the PLN-Nets, the Tanh-Net's, the seconds in all, and every
/// model's row under "results".
Config demo_summary(const std::vector<DemoResult>& results);

/// Writes models.csv and fit.csv into `out` (the test grid, the target, then
/// one column per network, named "<model> <width>").
void write_demo_records(const std::filesystem::path& out, const DemoConfig& config,
                        const std::vector<DemoResult>& results);

/// run_demo with the records of a run kept in `out` ("": none): config.json
/// before training (run/run.h's write_run_config, preset "default" and the
/// flags that differ from the defaults as overrides), then models.csv, fit.csv
/// and last summary.json (write_summary). `threads` is recorded, not set.
/// `out` is claimed as every run's directory is (take_run_directory: one
/// process at a time; a finished run of other settings replaced only with
/// `force`, and kept aside until this one has finished).
/// Returns summary.json's metrics (demo_summary).
Config run_demo_recorded(const DemoConfig& config, int threads, const std::filesystem::path& out,
                         const std::function<void(const DemoResult&)>& on_done = {}, bool force = false);

/// The demo as its records describe it: name "demo", its metrics and
/// figure (plot_run: every network against the target, from fit.csv). No key
/// table, presets, grids or run function: `pln demo` runs it, its flags its keys.
Experiment demo_experiment();

}  // namespace pln::exp
