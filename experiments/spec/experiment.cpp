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

}  // namespace pln::exp
