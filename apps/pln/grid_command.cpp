// `pln grid <experiment> --preset P --out DIR [--jobs N] [--emit commands|slurm]`.

#include "commands.h"

#include <common/experiment.h>
#include <common/grid.h>

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace pln::cli {

void add_grid_command(CLI::App& app) {
  struct Args {
    std::string experiment;
    exp::GridRequest request;
  };
  auto args = std::make_shared<Args>();
  std::string help = "run a preset's grid of cells in worker processes, resuming where it stopped; grids:";
  for (const auto& e : exp::experiments()) {
    for (const auto& [name, spec] : e.grids) help += fmt::format("\n  {} --preset {}: {}", e.name, name, spec.description);
  }
  auto* cmd = app.add_subcommand("grid", help);
  cmd->add_option("experiment", args->experiment, "experiment family")->required();
  cmd->add_option("--preset", args->request.preset, "grid preset")->required();
  cmd->add_option("--out", args->request.out, "grid directory (one sub-directory per cell)")->required();
  cmd->add_option("--jobs", args->request.jobs, "worker processes")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--threads", args->request.threads, "threads per worker (default: cores / jobs)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--emit", args->request.emit,
                  "print the pending cells' commands (commands) or write a Slurm job array (slurm) instead of running")
      ->check(CLI::IsMember({"commands", "slurm"}));
  cmd->callback([args] {
    const int failed = exp::run_grid(exp::find_experiment(args->experiment), args->request);
    if (failed > 0) {
      throw std::runtime_error(fmt::format("{} cell(s) failed; their run.log files say why; rerun to retry them", failed));
    }
  });
}

}  // namespace pln::cli
