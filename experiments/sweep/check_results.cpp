#include "sweep/check_results.h"

#include "records/csv.h"
#include "records/json.h"
#include "run/run.h"
#include "spec/experiment.h"
#include "sweep/cells.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

bool may_be_non_finite(const Experiment& e, const std::string& key) {
  return std::find(e.may_be_non_finite.begin(), e.may_be_non_finite.end(), key) != e.may_be_non_finite.end();
}

// A records.csv cell's number: finite, or "inf", "-inf", "nan" as summary.json
// writes them, or "" (NaN: null in an older summary.json). nullopt otherwise.
std::optional<double> cell_number(const std::string& text) {
  if (text.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (text == "nan" || text == "inf" || text == "-inf") return metric_number(Config(text));
  size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The manifest and records against the grid the code defines today.
void compare_with_code(const Experiment& e, const Config& manifest, const CsvTable& records, const fs::path& dir,
                       std::vector<std::string>& notes) {
  const auto name = manifest.at("grid").get<std::string>();
  const auto spec = e.grids.find(name);
  if (spec == e.grids.end()) {
    notes.push_back(fmt::format("{}: {} defines no grid '{}' any more; the records are those of grid.json",
                                dir.string(), e.name, name));
    return;
  }
  std::map<std::string, std::vector<std::string>> today;
  for (const auto& cell : expand_grid(spec->second)) today[cell.id] = cell.sets;
  size_t changed_cells = 0;
  std::string first_cell;
  for (const auto& cell : manifest.at("cells")) {
    const auto id = cell.at("id").get<std::string>();
    const auto it = today.find(id);
    if (it == today.end() || it->second != cell.at("set").get<std::vector<std::string>>()) {
      if (changed_cells++ == 0) first_cell = id;
    }
  }
  if (changed_cells > 0 || today.size() != manifest.at("cells").size()) {
    notes.push_back(fmt::format("{}: grid '{}' of {} has changed since these records: {} cells today, {} in "
                                "grid.json, {} of them defined otherwise (first: {})", dir.string(), name, e.name,
                                today.size(), manifest.at("cells").size(), changed_cells, first_cell));
    return;
  }
  // Every resolved configuration value of every record against today's preset;
  // an axis's column holds its labels, and some keys the summary's resolved value.
  std::set<std::string> not_config(e.resolved_in_summary.begin(), e.resolved_in_summary.end());
  for (const auto& axis : manifest.at("axes")) not_config.insert(axis.get<std::string>());
  std::map<std::string, std::pair<std::string, std::string>> differing;  // key -> (records, code), first seen
  size_t rows = 0;
  for (size_t r = 0; r < records.rows.size(); ++r) {
    const auto it = today.find(records.get(r, "cell"));
    if (it == today.end()) continue;
    bool row_differs = false;
    const Config config = resolve_config(e, spec->second.preset, it->second);
    for (const auto& item : config.items()) {
      if (!records.find(item.key()) || not_config.count(item.key())) continue;
      const auto recorded = records.get(r, item.key()), code = value_text(item.value());
      if (recorded == code) continue;
      row_differs = true;
      differing.try_emplace(item.key(), recorded, code);
    }
    rows += row_differs ? 1 : 0;
  }
  if (rows > 0) {
    std::string keys;
    for (const auto& [key, values] : differing) {
      keys += fmt::format("{}{} is {} in the records and {} in the code", keys.empty() ? "" : "; ", key,
                          values.first, values.second);
    }
    notes.push_back(fmt::format("{}: the preset of grid '{}' of {} has changed since these records ({} of {} "
                                "cells): {}", dir.string(), name, e.name, rows, records.rows.size(), keys));
  }
}

void check_grid(const fs::path& dir, std::vector<std::string>& problems, std::vector<std::string>& notes) {
  const auto manifest_path = dir / "grid.json";
  Config manifest;
  try {
    manifest = read_json_file(manifest_path);
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: unreadable: {}", manifest_path.string(), e.what()));
    return;
  }
  const Experiment* experiment = nullptr;
  try {
    experiment = &find_experiment(manifest.at("experiment").get<std::string>());
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: {}", manifest_path.string(), e.what()));
    return;
  }
  const auto records_path = dir / "records.csv";
  CsvTable records;
  try {
    records = read_csv(records_path);
  } catch (const std::exception& e) {
    problems.push_back(e.what());
    return;
  }
  std::vector<std::string> required = {"cell"};
  size_t expected = 0;
  std::set<std::string> ids;
  try {
    for (const auto& axis : manifest.at("axes")) required.push_back(axis.get<std::string>());
    expected = manifest.at("n_cells").get<size_t>();
    for (const auto& cell : manifest.at("cells")) ids.insert(cell.at("id").get<std::string>());
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: malformed: {}", manifest_path.string(), e.what()));
    return;
  }
  required.insert(required.end(), experiment->metrics.begin(), experiment->metrics.end());
  for (const auto& column : required) {
    if (!records.find(column)) problems.push_back(fmt::format("{}: no column '{}'", records_path.string(), column));
  }
  if (records.rows.size() != expected) {
    problems.push_back(fmt::format("{}: {} rows, the grid has {} cells", records_path.string(),
                                   records.rows.size(), expected));
  }
  // pln writes no control character into a record; one there (a newline in a
  // label) is a crafted or damaged file.
  auto control = [](const std::string& text) {
    return std::any_of(text.begin(), text.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  };
  for (size_t c = 0; c < records.header.size(); ++c) {
    if (control(records.header[c])) {
      problems.push_back(fmt::format("{}: column {}'s name holds a control character", records_path.string(), c + 1));
    }
    for (size_t r = 0; r < records.rows.size(); ++r) {
      if (control(records.rows[r][c])) {
        problems.push_back(fmt::format("{}: row {}, column '{}' holds a control character", records_path.string(),
                                       r + 1, control(records.header[c]) ? std::to_string(c + 1) : records.header[c]));
      }
    }
  }
  std::set<std::string> seen;
  for (size_t r = 0; r < records.rows.size(); ++r) {
    const auto id = records.get(r, "cell");
    if (!ids.count(id)) problems.push_back(fmt::format("{}: row {} names no cell of the grid ('{}')", records_path.string(), r + 1, id));
    if (!seen.insert(id).second) problems.push_back(fmt::format("{}: cell '{}' appears twice", records_path.string(), id));
    for (const auto& metric : reported_metrics(*experiment)) {
      if (!records.find(metric)) continue;
      const auto text = records.get(r, metric);
      const auto value = cell_number(text);
      if (!value) {
        problems.push_back(fmt::format("{}: cell '{}': {} is '{}', not a number", records_path.string(), id,
                                       metric, text));
      } else if (!std::isfinite(*value) && !may_be_non_finite(*experiment, metric)) {
        problems.push_back(fmt::format("{}: cell '{}': {} is '{}', not a finite number (and {} does not "
                                       "declare it may be)", records_path.string(), id, metric, text,
                                       experiment->name));
      }
    }
  }
  try {
    compare_with_code(*experiment, manifest, records, dir, notes);
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{}: cannot compare with the code's grid: {}", dir.string(), e.what()));
  }
}

void check_summary(const fs::path& path, std::vector<std::string>& problems) {
  Config summary;
  try {
    summary = read_json_file(path);
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: unreadable: {}", path.string(), e.what()));
    return;
  }
  if (!summary.contains("experiment") || !summary["experiment"].is_string()) {
    problems.push_back(path.string() + ": no \"experiment\" field");
    return;
  }
  const Experiment* experiment = nullptr;
  try {
    experiment = &find_experiment(summary["experiment"].get<std::string>());
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: {}", path.string(), e.what()));
    return;
  }
  for (const auto& metric : reported_metrics(*experiment)) {
    const bool later = std::find(experiment->later_metrics.begin(), experiment->later_metrics.end(), metric) !=
                       experiment->later_metrics.end();
    if (!summary.contains(metric)) {
      if (!later) problems.push_back(fmt::format("{}: no metric '{}'", path.string(), metric));
    } else if (!metric_number(summary[metric])) {
      problems.push_back(fmt::format("{}: {} is {}, not a number", path.string(), metric, summary[metric].dump()));
    }
  }
  // Every value that is not finite ("inf", "-inf", "nan"; null in older
  // summaries), declared metric or not, must be one the experiment declares may be.
  for (const auto& item : summary.items()) {
    if (item.key() == "experiment" || item.value().is_structured()) continue;
    const auto value = metric_number(item.value());
    if (value && !std::isfinite(*value) && !may_be_non_finite(*experiment, item.key())) {
      problems.push_back(fmt::format("{}: {} is {}, not a finite number (and {} does not declare it may be)",
                                     path.string(), item.key(), item.value().dump(), experiment->name));
    }
  }
  if (!fs::exists(path.parent_path() / "config.json")) {
    problems.push_back(path.string() + ": no config.json beside it");
  }
}

}  // namespace

std::vector<std::string> check_results(const fs::path& root, std::vector<std::string>* notes) {
  std::vector<std::string> problems, ignored_notes;
  if (!fs::is_directory(root)) return {root.string() + ": not a directory"};
  int found = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const auto name = entry.path().filename();
    if (name == "grid.json") {
      ++found;
      check_grid(entry.path().parent_path(), problems, notes ? *notes : ignored_notes);
    } else if (name == "summary.json") {
      ++found;
      check_summary(entry.path(), problems);
    }
  }
  if (found == 0) problems.push_back(root.string() + ": no grid.json or summary.json to check");
  return problems;
}

}  // namespace pln::exp
