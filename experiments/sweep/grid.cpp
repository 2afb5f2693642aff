#include "sweep/grid.h"

#include "records/atomic_file.h"
#include "records/json.h"
#include "run/device.h"
#include "run/run.h"
#include "sweep/gpu_slots.h"
#include "sweep/process.h"

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

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
bool ran_with_cell_settings(const Experiment& experiment, const GridSpec& spec, const GridCell& cell,
                            const std::filesystem::path& out) {
  try {
    const auto config = read_json_file(out / cell.id / "config.json");
    return config.at("preset").get<std::string>() == spec.preset &&
           without_device(upgrade_sets(experiment, config.at("set").get<std::vector<std::string>>())) ==
               without_device(cell.sets);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

bool cell_done(const Experiment& experiment, const GridSpec& spec, const GridCell& cell,
               const std::filesystem::path& out) {
  return std::filesystem::exists(out / cell.id / "summary.json") && ran_with_cell_settings(experiment, spec, cell, out);
}

namespace {

// A cell directory holding a run of other settings (another preset, other
// overrides, or a preset whose values have changed since): its checkpoint, if
// any, must not be resumed.
bool ran_with_other_settings(const Experiment& experiment, const GridSpec& spec, const GridCell& cell,
                             const std::filesystem::path& out) {
  const auto file = out / cell.id / "config.json";
  if (!std::filesystem::exists(file)) return false;
  if (!ran_with_cell_settings(experiment, spec, cell, out)) return true;
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
  if (experiment.resumable && !ran_with_other_settings(experiment, spec, cell, out)) argv.push_back("--resume");
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

CsvTable collect_records(const Experiment& experiment, const GridSpec& spec, const std::vector<GridCell>& cells,
                         const std::filesystem::path& out) {
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
    if (!cell_done(experiment, spec, cell, out)) continue;
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

int run_grid(const Experiment& experiment, const GridRequest& request) {
  const GridSpec& spec = find_grid(experiment, request.preset);
  if (request.out.empty()) throw std::invalid_argument("--out DIR is required");
  if (request.jobs < 1) throw std::invalid_argument(fmt::format("--jobs must be >= 1, got {}", request.jobs));
  if (!request.emit.empty() && request.emit != "commands" && request.emit != "slurm") {
    throw std::invalid_argument("--emit must be commands or slurm, got '" + request.emit + "'");
  }
  const int cores = resolve_threads(0);
  const int threads = request.threads > 0 ? request.threads : std::max(1, cores / request.jobs);
  auto cells = expand_grid(spec);
  if (!request.device.empty()) {
    for (auto& cell : cells) cell.sets.push_back("device=" + request.device);
  }
  // Absolute, so emitted commands work from any directory.
  const auto out = std::filesystem::absolute(request.out).lexically_normal();
  // Every cell's configuration must resolve before anything runs, its device
  // included (present here only when the cells run here).
  std::map<std::string, std::string> device_of;
  bool on_cuda = false;
  for (const auto& cell : cells) {
    const Config config = resolve_config(experiment, spec.preset, cell.sets);
    const std::string device = config.contains("device") ? get_string(config, "device") : "cpu";
    on_cuda = parse_device(device, request.emit.empty()).is_cuda() || on_cuda;
    device_of[cell.id] = device;
  }

  std::filesystem::create_directories(out);
  write_file_atomic(out / "grid.json", grid_manifest(experiment, request.preset).dump(2) + "\n");

  std::vector<const GridCell*> pending;
  size_t elsewhere = 0;
  for (const auto& cell : cells) {
    if (cell_done(experiment, spec, cell, out)) continue;
    // A cell another process is running (a second grid, a Slurm task) is left to it.
    if (cell_status(out / cell.id, false).state == CellState::kRunning) {
      ++elsewhere;
      continue;
    }
    if (std::filesystem::exists(out / cell.id / "summary.json")) {
      fmt::print("{}: finished with other settings than the grid's now; it runs again\n", cell.id);
    }
    pending.push_back(&cell);
  }
  if (elsewhere > 0) fmt::print("{} cell(s) running in another process are left to it\n", elsewhere);
  const auto write_records = [&] {
    const auto table = collect_records(experiment, spec, cells, out);
    write_file_atomic(out / "records.csv", to_csv(table));
    return table.rows.size();
  };

  if (request.emit == "commands") {
    for (const auto* cell : pending) {
      fmt::print("{}\n", shell_command(cell_command(experiment, spec, *cell, out, threads)));
    }
    return 0;
  }
  if (request.emit == "slurm") {
    SlurmArray array{fmt::format("pln-{}-{}", experiment.name, request.preset), out, {}, {}, threads,
                     fmt::format("pln grid {} --preset {} --out {}", experiment.name, request.preset, out.string())};
    for (const auto* cell : pending) {
      array.cell_dirs.push_back((out / cell->id).string());
      array.commands.push_back(shell_command(cell_command(experiment, spec, *cell, out, threads)));
    }
    SlurmOptions slurm = request.slurm;
    if (on_cuda && slurm.gpus_per_cell == 0) slurm.gpus_per_cell = 1;  // a CUDA cell needs its GPU
    const auto script = write_slurm_array(array, slurm);
    fmt::print("wrote {} and {} ({} pending cells)\n", script.string(), (out / "commands.txt").string(),
               pending.size());
    return 0;
  }

  fmt::print("pln grid {} --preset {}: {} cells, {} done, {} to run; {} job(s) x {} thread(s); out {}\n",
             experiment.name, request.preset, cells.size(), cells.size() - pending.size(),
             pending.size(), request.jobs, threads, out.string());
  GpuSlots gpus = on_cuda ? GpuSlots::visible() : GpuSlots(0, nullptr);
  if (on_cuda) fmt::print("cells on device 'cuda' spread over {} visible GPU(s)\n", gpus.count());
  std::fflush(stdout);
  write_records();
  std::map<pid_t, const GridCell*> running;
  std::map<pid_t, int> gpu_of;
  size_t next = 0, finished = 0;
  int failed = 0;
  // Workers must not outlive a grid that stops on an error.
  struct StopWorkers {
    std::map<pid_t, const GridCell*>& running;
    ~StopWorkers() {
      for (const auto& [pid, cell] : running) ::kill(pid, SIGTERM);
      for (const auto& [pid, cell] : running) ::waitpid(pid, nullptr, 0);
    }
  } stop_workers{running};
  while (next < pending.size() || !running.empty()) {
    while (next < pending.size() && static_cast<int>(running.size()) < request.jobs) {
      const auto* cell = pending[next++];
      auto argv = cell_command(experiment, spec, *cell, out, threads);
      argv[0] = "/proc/self/exe";  // this very binary, even if rebuilt while the grid runs
      const int gpu = device_of[cell->id] == "cuda" ? gpus.take() : -1;  // -1: none (cpu, or cuda:N as given)
      const pid_t pid = spawn(argv, out / cell->id / "run.log", gpus.environment(gpu));
      running[pid] = cell;
      gpu_of[pid] = gpu;
    }
    const auto [pid, code] = wait_child(-1);
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    gpus.give_back(gpu_of[pid]);
    gpu_of.erase(pid);
    const auto* cell = it->second;
    running.erase(it);
    ++finished;
    const bool ok = code == 0 && std::filesystem::exists(out / cell->id / "summary.json");
    if (ok) {
      write_records();
      fmt::print("[{}/{}] {} done\n", finished, pending.size(), cell->id);
    } else {
      ++failed;
      fmt::print("[{}/{}] {} FAILED (exit {}); last lines of its run.log:\n{}", finished,
                 pending.size(), cell->id, code, tail_of(out / cell->id / "run.log", 8));
    }
    std::fflush(stdout);
  }
  const size_t records = write_records();
  fmt::print("records: {} ({} of {} cells)\n", (out / "records.csv").string(), records,
             cells.size());
  return failed;
}

}  // namespace pln::exp
