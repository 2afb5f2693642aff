#pragma once
// Where a grid stands, read from its directory alone (nothing runs, no
// scheduler is asked): `pln grid ... --status`. A run's own state is
// run_state.h.

#include "records/run_state.h"
#include "spec/experiment.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// Every cell of the preset's grid done, running,
/// failed (with its log's last line) or pending.
struct GridStatus {
  std::string experiment, grid;
  std::filesystem::path out;
  std::vector<std::pair<std::string, CellStatus>> cells;  ///< in the grid's order
  size_t count(CellState state) const;
  Config to_json() const;
  std::string to_text() const;
};
GridStatus grid_status(const Experiment& experiment, const std::string& grid, const std::filesystem::path& out);

}  // namespace pln::exp
