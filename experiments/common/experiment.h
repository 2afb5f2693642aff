#pragma once
// What an experiment family gives the framework: its presets, its grids, a
// function that runs one configuration, the metrics every run reports, and
// its figures. The command line, the grid runner and `pln validate` work on
// this description only, so a new family is a new folder plus one line in
// experiments/registry.cpp.

#include "common/config.h"
#include "common/csv.h"

#include <c10/core/Device.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pln::exp {

struct RunContext {
  std::filesystem::path out;  ///< the run's directory, already created
  int threads = 1;
  bool resume = false;        ///< continue from the run's checkpoint (resumable experiments only)
  c10::Device device = c10::kCPU;  ///< the `device` key, checked
};

/// One value of a grid axis: a label for records and figures, and the keys it sets.
struct GridValue {
  std::string label;
  Config overrides = Config::object();
};

struct GridAxis {
  std::string name;
  std::vector<GridValue> values;
};

/// A grid: the cartesian product of its axes, each cell starting from a run preset.
struct GridSpec {
  std::string description;
  std::string preset;                ///< the run preset every cell starts from
  Config fixed = Config::object();   ///< keys set in every cell
  std::vector<GridAxis> axes;
};

struct Experiment {
  std::string name;
  std::string description;
  std::vector<std::string> presets;                          ///< e.g. smoke, cpu, paper
  std::function<Config(const std::string& preset)> preset;   ///< every key, resolved
  std::map<std::string, GridSpec> grids;                      ///< by grid preset name
  /// Trains and evaluates one configuration; returns the summary metrics.
  std::function<Config(const Config& config, const RunContext& context)> run;
  std::vector<std::string> metrics;      ///< keys every summary.json holds
  std::vector<std::string> nan_allowed;  ///< metrics that may be missing or NaN (e.g. a diverged run)
  /// Checkpoints as it trains: `pln <name> --resume` continues an interrupted
  /// run, and grid cells are started with --resume.
  bool resumable = false;
  /// Draws a grid's figures and writes its tables into `out` (the grid's own
  /// directory by default), from its records and the per-cell files under `dir`; optional.
  std::function<void(const std::filesystem::path& dir, const CsvTable& records,
                     const std::filesystem::path& out)>
      plot_grid;
  /// The per-cell files the grid's figures draw, relative to the grid's
  /// directory: what a compact results folder keeps beside records.csv.
  std::function<std::vector<std::string>(const CsvTable& records)> figure_inputs;
  /// Draws one run's figures into `out` (its directory by default); optional.
  std::function<void(const std::filesystem::path& run_dir, const std::filesystem::path& out)> plot_run;
};

/// Every experiment family, in the order the command line lists them.
const std::vector<Experiment>& experiments();
/// Throws std::invalid_argument listing the known names.
const Experiment& find_experiment(const std::string& name);
/// The grid named `preset` of `experiment`; throws listing the known grids.
const GridSpec& find_grid(const Experiment& experiment, const std::string& preset);

}  // namespace pln::exp
