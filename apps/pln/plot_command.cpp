// `pln plot DIR`: figures of a run, of a grid, or of every grid and run under DIR.

#include "commands.h"

#include <records/csv.h>
#include <records/json.h>
#include <system/atomic_file.h>
#include <sweep/pack.h>
#include <spec/experiment.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <stdexcept>

namespace pln::cli {

namespace {

namespace fs = std::filesystem;

std::string experiment_of(const fs::path& file) {
  const auto record = exp::read_json_file(file);
  try {
    return record.at("experiment").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

bool plot_one(const fs::path& dir, const fs::path& out, bool quiet) {
  // The figures' data go to out/plot-data: a link planted there would take them elsewhere.
  exp::refuse_symbolic_link(out / "plot-data", "the figures' data folder");
  if (fs::exists(dir / "grid.json")) {
    const auto manifest = exp::read_json_file(dir / "grid.json");
    const auto& e = exp::find_experiment(experiment_of(dir / "grid.json"));
    if (!e.plot_grid) return false;
    const auto records = exp::read_csv(dir / "records.csv");
    // Every family's figures read files of the cells records.csv names: each
    // must be a cell of this grid, not a path elsewhere.
    (void)exp::record_cells(manifest, records, dir);
    e.plot_grid(dir, records, out);
    if (!quiet) fmt::print("plotted grid {}{}\n", dir.string(), out == dir ? "" : " into " + out.string());
    return true;
  }
  if (fs::exists(dir / "summary.json")) {
    const auto& e = exp::find_experiment(experiment_of(dir / "config.json"));
    if (!e.plot_run) return false;
    e.plot_run(dir, out);
    if (!quiet) fmt::print("plotted run {}{}\n", dir.string(), out == dir ? "" : " into " + out.string());
    return true;
  }
  return false;
}

}  // namespace

int plot_directory(const std::string& path, const std::string& out_path, bool quiet) {
  const fs::path dir(path);
  const fs::path out = out_path.empty() ? dir : fs::path(out_path);
  if (!fs::is_directory(dir)) throw std::runtime_error(path + ": no such directory");
  // Figures go beside the records only in the folder itself: through a link
  // they would land in whatever it names.
  if (out_path.empty()) exp::refuse_symbolic_link(dir.has_filename() ? dir : dir.parent_path(), "the folder");
  if (fs::exists(dir / "grid.json") || fs::exists(dir / "summary.json")) {
    if (!plot_one(dir, out, quiet)) throw std::runtime_error(path + ": this experiment draws no figures");
    return 1;
  }
  // A folder of grids and runs (e.g. the output of `pln validate`, or results/);
  // cells of a grid are drawn by the grid. Each one's figures go to the same place under `out`.
  int drawn = 0;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_symlink() || !it->is_directory()) continue;  // a link in the folder is not followed
    if (fs::exists(it->path() / "grid.json") || fs::exists(it->path() / "summary.json")) {
      drawn += plot_one(it->path(), out / fs::relative(it->path(), dir), quiet) ? 1 : 0;
      it.disable_recursion_pending();
    }
  }
  if (drawn == 0) throw std::runtime_error(path + ": no grid (grid.json) or finished run (summary.json) to plot");
  return drawn;
}

void add_plot_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("plot", "draw figures (PNG and SVG, gnuplot) and tables from records");
  cmd->add_option("dir", *dir, "a run directory, a grid directory, or a folder holding them")->required();
  cmd->add_option("--out", *out, "where figures and tables go (default: beside the records)");
  cmd->callback([dir, out] { plot_directory(*dir, *out); });
}

}  // namespace pln::cli
