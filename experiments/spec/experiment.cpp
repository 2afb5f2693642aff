#include "spec/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace pln::exp {

std::vector<std::string> Experiment::preset_names() const {
  std::vector<std::string> names;
  for (const auto& p : presets) names.push_back(p.name);
  return names;
}

Config Experiment::preset(const std::string& preset_name) const {
  for (const auto& p : presets) {
    if (p.name != preset_name) continue;
    Config config = defaults;
    for (const auto& item : p.changes.items()) {
      // A preset may only change what the family takes: a misspelt key here
      // would otherwise become a key of its own that nothing reads.
      if (!config.contains(item.key())) {
        throw std::logic_error(fmt::format("{}: preset '{}' sets '{}', which the defaults lack", name,
                                           preset_name, item.key()));
      }
      config[item.key()] = item.value();
    }
    return config;
  }
  throw std::invalid_argument(
      fmt::format("{}: unknown preset '{}'; known: {}", name, preset_name, fmt::join(preset_names(), ", ")));
}

void upgrade_records(const Experiment& experiment, CsvTable& records) {
  for (const auto& [old_name, new_name] : experiment.renamed) {
    const auto old_column = records.find(old_name);
    if (!old_column || records.find(new_name)) continue;
    records.header.push_back(new_name);
    for (auto& row : records.rows) row.push_back(*old_column < row.size() ? row[*old_column] : std::string());
  }
}

std::vector<std::string> upgrade_sets(const Experiment& experiment, std::vector<std::string> sets) {
  for (auto& set : sets) {
    const auto key = set.substr(0, set.find('='));
    for (const auto& [old_name, new_name] : experiment.renamed) {
      // Only a renamed configuration key: pinn's `iters` is also a metric's old name.
      if (key == old_name && experiment.defaults.contains(new_name)) {
        set = new_name + set.substr(key.size());
        break;
      }
    }
  }
  return sets;
}

CsvTable read_records(const Experiment& experiment, const std::filesystem::path& grid_dir) {
  auto records = read_csv(grid_dir / "records.csv");
  upgrade_records(experiment, records);
  return records;
}

}  // namespace pln::exp
