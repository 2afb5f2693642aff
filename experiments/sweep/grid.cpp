#include "sweep/grid.h"

#include "system/atomic_file.h"
#include "run/run.h"
#include "sweep/launchers.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace pln::exp {

int run_grid(const Experiment& experiment, const GridRequest& request) {
  find_grid(experiment, request.preset);
  if (request.out.empty()) throw std::invalid_argument("--out DIR is required");
  refuse_control_characters(request.out, "--out");
  if (request.jobs < 1) throw std::invalid_argument(fmt::format("--jobs must be >= 1, got {}", request.jobs));
  if (!request.emit.empty() && request.emit != "commands" && request.emit != "slurm") {
    throw std::invalid_argument("--emit must be commands or slurm, got '" + request.emit + "'");
  }
  const int cores = resolve_threads(0);
  const int threads = request.threads > 0 ? resolve_threads(request.threads) : std::max(1, cores / request.jobs);
  if (request.emit.empty() && request.jobs > kMaxThreadsPerCpu * cores) {
    throw std::invalid_argument(fmt::format("--jobs {} is more than {} per CPU; this machine has {} CPUs",
                                            request.jobs, kMaxThreadsPerCpu, cores));
  }
  // A cell's device need be present only when the cells run here.
  const Sweep sweep = prepare_sweep(experiment, request.preset, request.out, threads, request.device,
                                    request.emit.empty());
  if (request.emit == "commands") {
    launch_commands(sweep);
    return 0;
  }
  if (request.emit == "slurm") {
    launch_slurm(sweep, request.slurm);
    return 0;
  }
  return launch_local(sweep, request.jobs);
}

}  // namespace pln::exp
