#pragma once
// The sweeper's side of a grid (Hydra's split of sweeper and launcher): which
// cells a GridSpec has, which of them are still to run, the manifest
// (grid.json) and the records (records.csv). A cell runs as `pln <experiment>
// --preset P --set ... --out DIR/<cell>`; a cell whose directory holds
// summary.json of its own settings is done and skipped, so an interrupted grid
// resumes. Where the pending cells run is a launcher's business (launchers.h).

#include "records/csv.h"
#include "spec/experiment.h"

#include <filesystem>
#include <map>
#include <optional>
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

/// Whether the cell is done: its summary.json exists and its config.json
/// records this cell's preset and overrides (a cell run with other settings,
/// the grid's definition having changed since, runs again).
bool cell_done(const GridSpec& spec, const GridCell& cell, const std::filesystem::path& out);

/// The command line that runs one cell. Cells of resumable experiments get
/// --resume, unless the cell's directory holds a run of other settings
/// (another preset or overrides, or preset values changed since), which starts
/// again; a finished one of those with --force (the grid replaces its own cell).
std::vector<std::string> cell_command(const Experiment& experiment, const GridSpec& spec,
                                      const GridCell& cell, const std::filesystem::path& out,
                                      int threads);

/// grid.json of a grid: the experiment, the grid and run presets, the axes and
/// every cell's id and overrides.
Config grid_manifest(const Experiment& experiment, const std::string& grid);

/// The axis names recorded in DIR/grid.json (empty when there is none).
std::vector<std::string> grid_axes(const std::filesystem::path& dir);

/// records.csv's table from the finished cells under `out` (columns: cell,
/// the axes, every config key, every metric; first-seen order).
CsvTable collect_records(const GridSpec& spec, const std::vector<GridCell>& cells, const std::filesystem::path& out);

/// Rebuilds DIR/records.csv from the finished cells on disk of grid `grid` as
/// the code defines it today, holding the directory's records lock (a second
/// grid's older view cannot replace it), and returns the table; nullopt when
/// the code defines no such grid any more (the records are left as they are).
std::optional<CsvTable> rebuild_records(const Experiment& experiment, const std::string& grid,
                                        const std::filesystem::path& out);

/// A grid ready for a launcher: every cell's configuration resolved, the
/// manifest written, the cells still to run chosen.
struct Sweep {
  Sweep() = default;
  Sweep(Sweep&&) = default;             // `pending` points into `cells`, whose buffer a move keeps
  Sweep(const Sweep&) = delete;
  Sweep& operator=(const Sweep&) = delete;

  const Experiment* experiment = nullptr;
  std::string grid;                          ///< the grid preset's name
  const GridSpec* spec = nullptr;
  std::filesystem::path out;                 ///< absolute, so emitted commands work from any directory
  int threads = 1;                           ///< per cell
  std::vector<GridCell> cells;               ///< every cell, in the grid's order
  std::vector<const GridCell*> pending;      ///< neither done nor running in another process
  size_t running_elsewhere = 0;              ///< cells another process was running when the sweep began
  std::map<std::string, std::string> device_of;  ///< each cell's `device` key
  bool on_cuda = false;                      ///< some cell runs on a CUDA device

  /// cell_command for one of the cells.
  std::vector<std::string> command(const GridCell& cell) const;
  /// cell_done for one of the cells, read from disk now.
  bool is_done(const GridCell& cell) const;
  /// Rebuilds records.csv from the summaries on disk, holding the directory's
  /// records lock so that a second grid's older view cannot replace it;
  /// returns its row count.
  size_t write_records() const;
};

/// Resolves every cell's configuration (with `device` added to each when not
/// empty; the device must be present here only when `check_device_present`),
/// so that nothing runs unless all resolve; then writes grid.json and chooses
/// the pending cells: not done, and not running in another process (a second
/// grid, a Slurm task), which are left to it.
Sweep prepare_sweep(const Experiment& experiment, const std::string& grid, const std::filesystem::path& out,
                    int threads, const std::string& device, bool check_device_present);

}  // namespace pln::exp
