#pragma once
// What an experiment family gives the framework: its key table, its presets, its grids, a
// function that runs one configuration, the metrics every run reports, and
// its figures. The command line, the grid runner and `pln validate` work on
// this description only, so a new family is a new folder plus one line in
// experiments/registry.cpp.

#include "spec/config.h"
#include "spec/keys.h"
#include "records/csv.h"

#include <c10/core/Device.h>

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

struct RunContext {
  std::filesystem::path out;  ///< the run's directory, already created
  bool resume = false;        ///< continue from the run's checkpoint (resumable experiments only)
  c10::Device device = c10::kCPU;  ///< the `device` key, checked
  /// For tests: > 0 ends the session with SessionStopped once it has written
  /// that many checkpoints, as a run killed just after them would end.
  int64_t stop_after_checkpoints = 0;
};

/// What a run throws when RunContext::stop_after_checkpoints ends it.
struct SessionStopped : std::runtime_error {
  using std::runtime_error::runtime_error;
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

/// A run preset: its name and the keys it changes from the defaults of the family's key table.
struct Preset {
  std::string name;
  Config changes = Config::object();
};

struct Experiment;
/// `metrics`, then `later_metrics`: every key a run of this version reports.
std::vector<std::string> reported_metrics(const Experiment& experiment);

struct Experiment {
  Experiment() = default;
  Experiment(std::string name_, std::string description_, KeyTable keys_ = {})
      : name(std::move(name_)), description(std::move(description_)), keys(std::move(keys_)) {}

  std::string name;
  std::string description;
  /// Every key the family takes: its default, what it allows, its help; the
  /// family's checks across keys (spec/keys.h). Its family is `name`. A
  /// family builds it from its Schema (spec/schema.h), whose read() its `run`
  /// uses to take the configuration as its struct.
  KeyTable keys;
  std::vector<Preset> presets;         ///< e.g. smoke, cpu, paper, in the order the command line lists them
  /// Keys the summary reports again, resolved (vit's `width` 0 is the size's
  /// width): records hold the summary's value, which is not the preset's.
  std::vector<std::string> resolved_in_summary;
  std::map<std::string, GridSpec> grids;                      ///< by grid preset name
  /// Trains and evaluates one configuration; returns the summary metrics.
  std::function<Config(const Config& config, const RunContext& context)> run;
  std::vector<std::string> metrics;      ///< keys every summary.json holds
  /// Keys a run reports since a later version: records made before may lack them.
  std::vector<std::string> later_metrics;
  /// Summary keys whose value may be a number that is not finite (written "inf", "-inf" or "nan").
  std::vector<std::string> may_be_non_finite;
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

  /// The defaults with preset `name`'s changes; throws std::invalid_argument
  /// listing the presets (std::logic_error for a change to a key the defaults lack).
  Config preset(const std::string& name) const;
  std::vector<std::string> preset_names() const;
  /// `pln <name> --help`'s footer: the key table, then each preset's changes.
  std::string help() const;
};

/// Every experiment family, in the order the command line lists them.
const std::vector<Experiment>& experiments();
/// A family by name, or the demo's description (`pln demo`: no presets or grids, not among
/// experiments()); throws std::invalid_argument listing the known names.
const Experiment& find_experiment(const std::string& name);
/// The grid named `preset` of `experiment`; throws listing the known grids.
const GridSpec& find_grid(const Experiment& experiment, const std::string& preset);

}  // namespace pln::exp
