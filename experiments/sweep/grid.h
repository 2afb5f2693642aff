#pragma once
// Grids: the cells of a GridSpec, each run as `pln <experiment> --preset P
// --set ... --out DIR/<cell>` in a worker process. A cell whose directory
// holds summary.json is done and skipped, so an interrupted grid resumes;
// records.csv is rebuilt from the summaries on disk after every cell, so it
// never loses or repeats a record.

#include "records/run_state.h"
#include "records/csv.h"
#include "spec/experiment.h"
#include "sweep/slurm.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace pln::exp {

struct GridCell {
  std::string id;                                ///< directory name, stable across runs
  std::map<std::string, std::string> labels;     ///< axis name -> value label
  std::vector<std::string> sets;                 ///< key=value overrides, in order
};

/// An axis setting one numeric key, labelled by its values.
GridAxis number_axis(const std::string& key, const std::vector<double>& values);
GridAxis integer_axis(const std::string& key, const std::vector<int64_t>& values);
GridAxis string_axis(const std::string& key, const std::vector<std::string>& values);

/// Cells in a fixed order: the last axis varies fastest.
std::vector<GridCell> expand_grid(const GridSpec& spec);

struct GridRequest {
  std::string preset;              ///< grid preset name
  std::filesystem::path out;
  int jobs = 1;                    ///< worker processes
  int threads = 0;                 ///< per worker; 0: cores / jobs
  std::string emit;                ///< "", "commands" or "slurm"
  std::string device;              ///< every cell's device ("": the preset's); not a cell setting
  SlurmOptions slurm;              ///< for emit = "slurm"
};

/// Runs (or emits) the pending cells; returns the number of cells that failed.
int run_grid(const Experiment& experiment, const GridRequest& request);

/// Whether the cell is done: its summary.json exists and its config.json
/// records this cell's preset and overrides (a cell run with other settings,
/// the grid's definition having changed since, runs again).
bool cell_done(const Experiment& experiment, const GridSpec& spec, const GridCell& cell,
               const std::filesystem::path& out);

/// The axis names recorded in DIR/grid.json (empty when there is none).
std::vector<std::string> grid_axes(const std::filesystem::path& dir);

/// The command line that runs one cell. Cells of resumable experiments get
/// --resume, unless the cell's directory holds a run of other settings
/// (another preset or overrides, or preset values changed since), which starts again.
std::vector<std::string> cell_command(const Experiment& experiment, const GridSpec& spec,
                                      const GridCell& cell, const std::filesystem::path& out,
                                      int threads);

/// grid.json of a grid: the experiment, the grid and run presets, the axes and
/// every cell's id and overrides.
Config grid_manifest(const Experiment& experiment, const std::string& grid);

/// records.csv's table from the finished cells under `out` (columns: cell,
/// the axes, every config key, every metric; first-seen order).
CsvTable collect_records(const Experiment& experiment, const GridSpec& spec, const std::vector<GridCell>& cells,
                         const std::filesystem::path& out);

}  // namespace pln::exp
