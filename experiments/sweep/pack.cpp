#include "sweep/pack.h"

#include "system/atomic_file.h"
#include "records/csv.h"
#include "records/file_lock.h"
#include "records/json.h"
#include "system/provenance.h"
#include "spec/experiment.h"
#include "sweep/cells.h"
#include "system/printable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

// The distinct values of `key` over the cells' config.json files, as JSON.
Config distinct(const std::vector<Config>& configs, const char* key) {
  std::set<std::string> seen;
  Config values = Config::array();
  for (const auto& c : configs) {
    if (!c.contains(key)) continue;
    if (seen.insert(c.at(key).dump()).second) values.push_back(c.at(key));
  }
  return values.size() == 1 ? values[0] : values;
}

}  // namespace

std::vector<std::string> record_cells(const Config& manifest, const CsvTable& records,
                                      const fs::path& grid) {
  const auto records_path = (grid / "records.csv").string();
  if (!records.find("cell")) throw std::runtime_error(records_path + ": no column 'cell'");
  std::set<std::string> ids;
  try {
    for (const auto& cell : manifest.at("cells")) ids.insert(cell.at("id").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error((grid / "grid.json").string() + ": malformed: " + e.what());
  }
  std::vector<std::string> cells;
  std::map<std::string, size_t> row_of;
  for (size_t r = 0; r < records.rows.size(); ++r) {
    const auto cell = records.get(r, "cell");
    // A cell is one directory of the grid, never a path elsewhere.
    path_inside(grid, cell, fmt::format("{}: row {}", records_path, r + 1));
    if (fs::path(cell).has_parent_path() || !ids.count(cell)) {
      throw std::runtime_error(fmt::format("{}: row {} names no cell of grid.json ('{}')", records_path, r + 1,
                                           printable(fs::path(cell).filename().string())));
    }
    // One row per cell: a cell listed twice stands in for one left out.
    if (const auto [first, fresh] = row_of.emplace(cell, r + 1); !fresh) {
      throw std::runtime_error(fmt::format("{}: rows {} and {} both name cell '{}'", records_path, first->second,
                                           r + 1, cell));
    }
    cells.push_back(cell);
  }
  return cells;
}

uintmax_t pack_results(const PackRequest& request) {
  const fs::path& grid = request.grid;
  // Provenance is JSON, which holds UTF-8 text only: checked before anything is written.
  if (printable(request.revision) != request.revision) {
    throw std::invalid_argument(fmt::format("--revision '{}' holds a control character or is not UTF-8 text",
                                            printable(request.revision)));
  }
  // The destination as a name beside its parent: "DEST/" and "DEST" are one folder.
  refuse_control_characters(request.dest, "the destination");
  fs::path dest = fs::absolute(request.dest).lexically_normal();
  if (!dest.has_filename()) dest = dest.parent_path();
  fs::create_directories(dest.parent_path());
  // Packs into one folder take turns: a second one would remove the first's
  // staging folder under it, or swap in between its renames. The lock is on
  // the parent folder itself, so that none is left beside the destination.
  const FileLock lock = FileLock::wait_for_directory(dest.parent_path());
  // The destination is replaced whole: only a folder that is an earlier pack
  // (or empty) may be, so that a mistyped DEST removes no one's files.
  if (fs::exists(dest)) {
    if (!fs::is_directory(dest)) throw std::runtime_error(dest.string() + ": exists and is not a folder; refused");
    const bool earlier_pack = fs::exists(dest / "provenance.json") && fs::exists(dest / "grid.json");
    if (!earlier_pack && !fs::is_empty(dest)) {
      throw std::runtime_error(fmt::format("{} holds files and is not an earlier pack (no provenance.json and "
                                           "grid.json); pln pack replaces its destination whole, so name a new "
                                           "or empty folder", dest.string()));
    }
  }
  const fs::path canonical_grid = fs::weakly_canonical(grid), canonical_dest = fs::weakly_canonical(dest);
  if (canonical_grid == canonical_dest) throw std::runtime_error(dest.string() + " is the grid itself; refused");

  const Config manifest = read_json_file(grid / "grid.json");
  const auto& experiment = find_experiment(manifest.at("experiment").get<std::string>());
  CsvTable records = read_csv(grid / "records.csv");
  const size_t cells = manifest.at("n_cells").get<size_t>();
  if (records.rows.size() < cells) {
    // A grid stopped between a cell's summary and its records (or whose cells
    // another process finished) holds more than records.csv says.
    if (const auto rebuilt = rebuild_records(experiment, manifest.at("grid").get<std::string>(), grid);
        rebuilt && rebuilt->rows.size() > records.rows.size()) {
      fmt::print("{}: records.csv held {} of the {} finished cells; rebuilt\n", grid.string(), records.rows.size(),
                 rebuilt->rows.size());
      records = *rebuilt;
    }
  }
  if (records.rows.size() != cells) {
    throw std::runtime_error(fmt::format("{}: the grid is unfinished ({} of {} cells in records.csv); "
                                         "run `pln grid` to finish it first", grid.string(),
                                         records.rows.size(), cells));
  }
  std::vector<Config> configs;
  for (const auto& cell : record_cells(manifest, records, grid)) {
    if (!fs::exists(grid / cell / "summary.json")) {
      throw std::runtime_error(fmt::format("{}: cell '{}' is listed, but {} has no summary.json: the records "
                                           "disagree with the finished cells", (grid / "records.csv").string(), cell,
                                           (grid / cell).string()));
    }
    configs.push_back(read_json_file(grid / cell / "config.json"));
  }

  // Written beside the destination and swapped in whole: the files of an
  // earlier pack (figure inputs it no longer draws) do not survive, and a pack
  // that fails or is interrupted leaves the earlier folder as it was.
  fs::path staging = dest;
  staging += ".packing";
  fs::remove_all(staging);
  fs::create_directories(staging);
  // A pack that fails leaves nothing beside the destination.
  const RemovedOnExit remove_staging(staging);
  write_file_atomic(staging / "grid.json", manifest.dump() + "\n");  // compact: the same manifest in half the bytes
  write_file_atomic(staging / "records.csv", to_csv(records));
  std::vector<std::string> inputs;
  if (experiment.figure_inputs) inputs = experiment.figure_inputs(records);
  for (const auto& file : inputs) {
    const auto source = path_inside(grid, file, (grid / "records.csv").string());
    const auto target = path_inside(staging, file, (grid / "records.csv").string());
    fs::create_directories(target.parent_path());
    // A figure's input is a CSV log: read as records are, never through a link.
    write_file_atomic(target, read_regular_file(source, kMaxCsvBytes));
  }
  Config revision = request.revision.empty() ? distinct(configs, "revision") : Config(request.revision);
  if (revision.is_array() && revision.empty()) revision = "unknown";
  const Config provenance = {{"experiment", experiment.name},
                             {"grid", manifest.at("grid")},
                             {"cells", cells},
                             {"revision", revision},
                             {"machine", machine_description()},
                             {"threads", distinct(configs, "threads")},
                             {"torch", distinct(configs, "torch")},
                             {"kernels", distinct(configs, "kernels")},
                             {"blas", distinct(configs, "blas")},
                             {"figure_inputs", inputs}};
  write_file_atomic(staging / "provenance.json", provenance.dump(2) + "\n");
  uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(staging)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  if (!fs::exists(dest)) {
    fs::rename(staging, dest);
  } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) == 0) {
    // One step: DEST always holds a whole pack, the earlier one or this one.
    fs::remove_all(staging);
  } else {
    // A file system without RENAME_EXCHANGE: two renames.
    fs::path replaced = dest;
    replaced += ".replaced";
    fs::remove_all(replaced);
    fs::rename(dest, replaced);
    fs::rename(staging, dest);
    fs::remove_all(replaced);
  }
  return bytes;
}

}  // namespace pln::exp
