#pragma once
// `pln grid`: a grid's cells (cells.h) handed to the launcher the request
// names (launchers.h).

#include "sweep/cells.h"
#include "sweep/slurm.h"

#include <filesystem>
#include <string>

namespace pln::exp {

struct GridRequest {
  std::string preset;              ///< grid preset name
  std::filesystem::path out;
  int jobs = 1;                    ///< worker processes
  int threads = 0;                 ///< per worker; 0: cores / jobs
  std::string emit;                ///< "", "commands" or "slurm"
  std::string device;              ///< every cell's device ("": the preset's); not a cell setting
  SlurmOptions slurm;              ///< for emit = "slurm"
};

/// Runs (or emits) the pending cells; returns the number of cells that failed.
int run_grid(const Experiment& experiment, const GridRequest& request);

}  // namespace pln::exp
