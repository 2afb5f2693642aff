#include "sweep/grid_state.h"

#include "sweep/cells.h"

#include <fmt/format.h>

#include <algorithm>

namespace pln::exp {

size_t GridStatus::count(CellState state) const {
  return static_cast<size_t>(std::count_if(cells.begin(), cells.end(),
                                           [&](const auto& c) { return c.second.state == state; }));
}

Config GridStatus::to_json() const {
  Config j = {{"experiment", experiment}, {"grid", grid}, {"out", out.string()}, {"cells", cells.size()}};
  for (const auto state : {CellState::kDone, CellState::kRunning, CellState::kFailed, CellState::kPending}) {
    j[to_string(state)] = count(state);
  }
  Config list = Config::array();
  for (const auto& [id, status] : cells) {
    list.push_back({{"cell", id}, {"state", to_string(status.state)}, {"detail", status.detail}});
  }
  j["by_cell"] = list;
  return j;
}

std::string GridStatus::to_text() const {
  std::string text = fmt::format("{} grid '{}' in {}: {} cells: {} done, {} running, {} failed, {} pending\n",
                                 experiment, grid, out.string(), cells.size(), count(CellState::kDone),
                                 count(CellState::kRunning), count(CellState::kFailed), count(CellState::kPending));
  for (const auto state : {CellState::kFailed, CellState::kRunning, CellState::kPending}) {
    for (const auto& [id, status] : cells) {
      if (status.state != state || (state == CellState::kPending && status.detail.empty())) continue;
      text += fmt::format("  {} {}: {}\n", to_string(state), id, status.detail);
    }
  }
  return text;
}

GridStatus grid_status(const Experiment& experiment, const std::string& grid, const std::filesystem::path& out) {
  const GridSpec& spec = find_grid(experiment, grid);
  GridStatus status{experiment.name, grid, std::filesystem::absolute(out).lexically_normal(), {}};
  for (const auto& cell : expand_grid(spec)) {
    status.cells.emplace_back(cell.id, cell_status(status.out / cell.id, cell_done(spec, cell, status.out)));
  }
  return status;
}

}  // namespace pln::exp
