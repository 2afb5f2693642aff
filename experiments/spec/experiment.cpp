#include "spec/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace pln::exp {

std::vector<std::string> reported_metrics(const Experiment& experiment) {
  auto keys = experiment.metrics;
  keys.insert(keys.end(), experiment.later_metrics.begin(), experiment.later_metrics.end());
  return keys;
}

std::vector<std::string> Experiment::preset_names() const {
  std::vector<std::string> names;
  for (const auto& p : presets) names.push_back(p.name);
  return names;
}

Config Experiment::preset(const std::string& preset_name) const {
  for (const auto& p : presets) {
    if (p.name != preset_name) continue;
    Config config = keys.defaults();
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

std::string Experiment::help() const {
  std::string out = "Keys (--set key=value; a preset changes some from these defaults):\n" + keys.help();
  if (!presets.empty()) out += "Presets (the keys each changes):\n";
  for (const auto& p : presets) {
    std::vector<std::string> changes;
    for (const auto& item : p.changes.items()) changes.push_back(item.key() + "=" + value_text(item.value()));
    out += fmt::format("  {}: {}\n", p.name, changes.empty() ? "(the defaults)" : fmt::format("{}", fmt::join(changes, " ")));
  }
  return out;
}

}  // namespace pln::exp
