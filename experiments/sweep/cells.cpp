#include "sweep/cells.h"

#include "system/atomic_file.h"
#include "records/file_lock.h"
#include "records/json.h"
#include "records/run_state.h"
#include "run/device.h"
#include "run/run.h"
#include "system/process.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace pln::exp {

namespace {

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+') out += c;
  }
  return out.empty() ? "_" : out;
}

std::string cell_text(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";  // NaN metrics are stored as null
  return value_text(value);
}

void add_column(CsvTable& table, std::set<std::string>& seen, const std::string& name) {
  if (seen.insert(name).second) table.header.push_back(name);
}

// The device a cell ran on is not one of its settings: a grid begun on one
// device finishes on another.
std::vector<std::string> without_device(std::vector<std::string> sets) {
  sets.erase(std::remove_if(sets.begin(), sets.end(), [](const std::string& s) { return s.rfind("device=", 0) == 0; }),
             sets.end());
  return sets;
}

// A cell is done when its summary exists and its config.json records this
// cell's preset and overrides; a cell run with other settings (the grid's
// definition changed since) is not, and runs again.
bool ran_with_cell_settings(const GridSpec& spec, const GridCell& cell, const std::filesystem::path& out) {
  try {
    const auto config = read_json_file(out / cell.id / "config.json");
    return config.at("preset").get<std::string>() == spec.preset &&
           without_device(config.at("set").get<std::vector<std::string>>()) ==
               without_device(cell.sets);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

bool cell_done(const GridSpec& spec, const GridCell& cell, const std::filesystem::path& out) {
  return std::filesystem::exists(out / cell.id / "summary.json") && ran_with_cell_settings(spec, cell, out);
}

namespace {

// A cell directory holding a run of other settings (another preset, other
// overrides, or a preset whose values have changed since): its checkpoint, if
// any, must not be resumed.
bool ran_with_other_settings(const Experiment& experiment, const GridSpec& spec, const GridCell& cell,
                             const std::filesystem::path& out) {
  const auto file = out / cell.id / "config.json";
  if (!std::filesystem::exists(file)) return false;
  if (!ran_with_cell_settings(spec, cell, out)) return true;
  try {
    auto ran = read_json_file(file).at("config");
    auto now = resolve_config(experiment, spec.preset, cell.sets);
    ran.erase("device");
    now.erase("device");
    return ran != now;
  } catch (const std::exception&) {
    return true;
  }
}

}  // namespace

std::vector<std::string> grid_axes(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "grid.json")) return {};
  return read_json_file(dir / "grid.json").at("axes").get<std::vector<std::string>>();
}

GridAxis number_axis(const std::string& key, const std::vector<double>& values) {
  GridAxis axis{key, {}};
  for (double v : values) axis.values.push_back({fmt::format("{}", v), Config{{key, v}}});
  return axis;
}

GridAxis integer_axis(const std::string& key, const std::vector<int64_t>& values) {
  GridAxis axis{key, {}};
  for (int64_t v : values) axis.values.push_back({std::to_string(v), Config{{key, v}}});
  return axis;
}

GridAxis string_axis(const std::string& key, const std::vector<std::string>& values) {
  GridAxis axis{key, {}};
  for (const auto& v : values) axis.values.push_back({v, Config{{key, v}}});
  return axis;
}

std::vector<GridCell> expand_grid(const GridSpec& spec) {
  size_t total = 1;
  for (const auto& axis : spec.axes) {
    if (axis.values.empty()) throw std::logic_error("grid axis '" + axis.name + "' has no values");
    total *= axis.values.size();
  }
  std::vector<GridCell> cells;
  cells.reserve(total);
  const int digits = static_cast<int>(std::to_string(total).size());
  for (size_t index = 0; index < total; ++index) {
    GridCell cell;
    for (const auto& item : spec.fixed.items()) cell.sets.push_back(item.key() + "=" + value_text(item.value()));
    std::string id = fmt::format("{:0{}}", index, digits);
    size_t rest = index;
    std::vector<const GridValue*> chosen(spec.axes.size());
    for (size_t a = spec.axes.size(); a-- > 0;) {
      chosen[a] = &spec.axes[a].values[rest % spec.axes[a].values.size()];
      rest /= spec.axes[a].values.size();
    }
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      cell.labels[spec.axes[a].name] = chosen[a]->label;
      id += "_" + slug(spec.axes[a].name) + "=" + slug(chosen[a]->label);
      for (const auto& item : chosen[a]->overrides.items()) {
        cell.sets.push_back(item.key() + "=" + value_text(item.value()));
      }
    }
    cell.id = id;
    cells.push_back(std::move(cell));
  }
  return cells;
}

std::vector<std::string> cell_command(const Experiment& experiment, const GridSpec& spec,
                                      const GridCell& cell, const std::filesystem::path& out,
                                      int threads) {
  std::vector<std::string> argv = {self_executable().string(), experiment.name, "--preset", spec.preset};
  for (const auto& s : cell.sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  argv.insert(argv.end(), {"--threads", std::to_string(threads), "--out", (out / cell.id).string()});
  const bool other_settings = ran_with_other_settings(experiment, spec, cell, out);
  if (experiment.resumable && !other_settings) argv.push_back("--resume");
  // The grid owns its cells: one finished with settings the grid no longer
  // has runs again, replacing it (see take_run_directory), as does one whose
  // replacement was stopped.
  if ((other_settings && std::filesystem::exists(out / cell.id / "summary.json")) ||
      std::filesystem::exists(out / cell.id / ".replaced" / "summary.json")) {
    argv.push_back("--force");
  }
  return argv;
}

Config grid_manifest(const Experiment& experiment, const std::string& grid) {
  const GridSpec& spec = find_grid(experiment, grid);
  const auto cells = expand_grid(spec);
  Config manifest = {{"experiment", experiment.name}, {"grid", grid},
                     {"description", spec.description}, {"run_preset", spec.preset},
                     {"n_cells", cells.size()}, {"axes", Config::array()}, {"cells", Config::array()}};
  for (const auto& axis : spec.axes) manifest["axes"].push_back(axis.name);
  for (const auto& cell : cells) manifest["cells"].push_back({{"id", cell.id}, {"set", cell.sets}});
  return manifest;
}

CsvTable collect_records(const GridSpec& spec, const std::vector<GridCell>& cells, const std::filesystem::path& out) {
  CsvTable table;
  std::set<std::string> seen;
  add_column(table, seen, "cell");
  for (const auto& axis : spec.axes) add_column(table, seen, axis.name);
  struct Done {
    const GridCell* cell;
    Config config, summary;
  };
  std::vector<Done> done;
  for (const auto& cell : cells) {
    const auto dir = out / cell.id;
    if (!cell_done(spec, cell, out)) continue;
    Done d{&cell, read_json_file(dir / "config.json").at("config"), read_json_file(dir / "summary.json")};
    d.summary.erase("experiment");
    for (const auto& item : d.config.items()) add_column(table, seen, item.key());
    for (const auto& item : d.summary.items()) add_column(table, seen, item.key());
    done.push_back(std::move(d));
  }
  for (const auto& d : done) {
    std::vector<std::string> row(table.header.size());
    row[0] = d.cell->id;
    for (size_t i = 1; i < table.header.size(); ++i) {
      const auto& name = table.header[i];
      if (auto it = d.cell->labels.find(name); it != d.cell->labels.end() && i <= spec.axes.size()) {
        row[i] = it->second;
      } else if (d.summary.contains(name)) {
        row[i] = cell_text(d.summary[name]);
      } else if (d.config.contains(name)) {
        row[i] = cell_text(d.config[name]);
      }
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::vector<std::string> Sweep::command(const GridCell& cell) const {
  return cell_command(*experiment, *spec, cell, out, threads);
}

bool Sweep::is_done(const GridCell& cell) const { return cell_done(*spec, cell, out); }

namespace {

CsvTable write_records_locked(const GridSpec& spec, const std::vector<GridCell>& cells,
                              const std::filesystem::path& out) {
  const FileLock records_lock = FileLock::wait_for(out / "records.lock");
  auto table = collect_records(spec, cells, out);
  write_file_atomic(out / "records.csv", to_csv(table));
  return table;
}

}  // namespace

size_t Sweep::write_records() const { return write_records_locked(*spec, cells, out).rows.size(); }

std::optional<CsvTable> rebuild_records(const Experiment& experiment, const std::string& grid,
                                        const std::filesystem::path& out) {
  const auto spec = experiment.grids.find(grid);
  if (spec == experiment.grids.end()) return std::nullopt;
  return write_records_locked(spec->second, expand_grid(spec->second), out);
}

Sweep prepare_sweep(const Experiment& experiment, const std::string& grid, const std::filesystem::path& out,
                    int threads, const std::string& device, bool check_device_present) {
  Sweep sweep;
  sweep.experiment = &experiment;
  sweep.grid = grid;
  sweep.spec = &find_grid(experiment, grid);
  sweep.threads = threads;
  sweep.cells = expand_grid(*sweep.spec);
  if (!device.empty()) {
    for (auto& cell : sweep.cells) cell.sets.push_back("device=" + device);
  }
  sweep.out = std::filesystem::absolute(out).lexically_normal();
  // Every cell's configuration must resolve before anything runs, its device
  // included (present here only when the cells run here).
  for (const auto& cell : sweep.cells) {
    const Config config = resolve_config(experiment, sweep.spec->preset, cell.sets);
    const std::string cell_device = config.contains("device") ? get_string(config, "device") : "cpu";
    sweep.on_cuda = parse_device(cell_device, check_device_present).is_cuda() || sweep.on_cuda;
    sweep.device_of[cell.id] = cell_device;
  }

  std::filesystem::create_directories(sweep.out);
  write_file_atomic(sweep.out / "grid.json", grid_manifest(experiment, grid).dump(2) + "\n");

  size_t elsewhere = 0;
  for (const auto& cell : sweep.cells) {
    // A cell planted as a link would read and run the cell elsewhere.
    refuse_symbolic_link(sweep.out / cell.id, "cell");
    if (cell_done(*sweep.spec, cell, sweep.out)) continue;
    // A cell another process is running (a second grid, a Slurm task) is left to it.
    if (cell_status(sweep.out / cell.id, false).state == CellState::kRunning) {
      ++elsewhere;
      continue;
    }
    if (std::filesystem::exists(sweep.out / cell.id / "summary.json")) {
      fmt::print("{}: finished with other settings than the grid's now; it runs again\n", cell.id);
    }
    sweep.pending.push_back(&cell);
  }
  if (elsewhere > 0) fmt::print("{} cell(s) running in another process are left to it\n", elsewhere);
  sweep.running_elsewhere = elsewhere;
  return sweep;
}

}  // namespace pln::exp
