#include "records/pack.h"

#include "records/atomic_file.h"
#include "records/csv.h"
#include "records/json.h"
#include "run/provenance.h"
#include "spec/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <fstream>
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

uintmax_t pack_results(const PackRequest& request) {
  const fs::path& grid = request.grid;
  const Config manifest = read_json_file(grid / "grid.json");
  const auto& experiment = find_experiment(manifest.at("experiment").get<std::string>());
  const CsvTable records = read_csv(grid / "records.csv");
  const size_t cells = manifest.at("n_cells").get<size_t>();
  if (records.rows.size() != cells) {
    throw std::runtime_error(fmt::format("{}: the grid is unfinished ({} of {} cells in records.csv); "
                                         "run `pln grid` to finish it first", grid.string(),
                                         records.rows.size(), cells));
  }
  std::vector<Config> configs;
  for (size_t r = 0; r < records.rows.size(); ++r) configs.push_back(read_json_file(grid / records.get(r, "cell") / "config.json"));

  // Written beside the destination and swapped in whole: the files of an
  // earlier pack (figure inputs it no longer draws) do not survive, and a pack
  // that fails or is interrupted leaves the earlier folder as it was.
  fs::path staging = request.dest;
  staging += ".packing";
  fs::remove_all(staging);
  fs::create_directories(staging);
  write_file_atomic(staging / "grid.json", manifest.dump() + "\n");  // compact: the same manifest in half the bytes
  write_file_atomic(staging / "records.csv", read_text(grid / "records.csv"));
  std::vector<std::string> inputs;
  if (experiment.figure_inputs) inputs = experiment.figure_inputs(records);
  for (const auto& file : inputs) {
    fs::create_directories((staging / file).parent_path());
    write_file_atomic(staging / file, read_text(grid / file));
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
  if (fs::exists(request.dest)) {
    fs::path replaced = request.dest;
    replaced += ".replaced";
    fs::remove_all(replaced);
    fs::rename(request.dest, replaced);
    fs::rename(staging, request.dest);
    fs::remove_all(replaced);
  } else {
    fs::rename(staging, request.dest);
  }
  return bytes;
}

}  // namespace pln::exp
