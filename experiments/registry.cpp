// The experiment families the command line knows.

#include "spec/experiment.h"
#include "demo/demo.h"
#include "fourier/fourier.h"
#include "images/images.h"
#include "pinn/pinn.h"
#include "vit/vit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace pln::exp {

const std::vector<Experiment>& experiments() {
  static const std::vector<Experiment> all = {pinn_experiment(), fourier_experiment(), cnn_experiment(), vgg_experiment(),
                                                  vit_experiment()};
  return all;
}

const Experiment& find_experiment(const std::string& name) {
  // The demo's records are described like a family's, but `pln demo` runs it:
  // it has no presets or grids, so it is not among experiments().
  static const Experiment demo = demo_experiment();
  if (name == demo.name) return demo;
  std::vector<std::string> names;
  for (const auto& e : experiments()) {
    if (e.name == name) return e;
    names.push_back(e.name);
  }
  throw std::invalid_argument(
      fmt::format("unknown experiment '{}'; known: {}", name, fmt::join(names, ", ")));
}

const GridSpec& find_grid(const Experiment& experiment, const std::string& preset) {
  const auto it = experiment.grids.find(preset);
  if (it != experiment.grids.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, spec] : experiment.grids) names.push_back(name);
  throw std::invalid_argument(fmt::format("{}: unknown grid preset '{}'; known: {}", experiment.name,
                                          preset, fmt::join(names, ", ")));
}

}  // namespace pln::exp
