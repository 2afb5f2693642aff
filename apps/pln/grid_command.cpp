// `pln grid <experiment> --preset P --out DIR [--jobs N] [--emit commands|slurm [cluster options]] [--status [--json]]`.

#include "commands.h"

#include <sweep/grid_state.h>
#include <spec/experiment.h>
#include <sweep/grid.h>

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace pln::cli {

void add_grid_command(CLI::App& app) {
  struct Args {
    std::string experiment;
    exp::GridRequest request;
    bool status = false, json = false;
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
  cmd->add_option("--jobs", args->request.jobs, "worker processes")->capture_default_str();  // run_grid checks it
  cmd->add_option("--threads", args->request.threads, "threads per worker (default: cores / jobs)");
  cmd->add_option("--device", args->request.device,
                  "every cell's device: cpu, cuda (local --jobs spread over the visible GPUs; one GPU per "
                  "Slurm task) or cuda:N; cells done on another device stay done");
  cmd->add_option("--emit", args->request.emit,
                  "print the pending cells' commands (commands) or write a Slurm job array (slurm) instead of running")
      ->check(CLI::IsMember({"commands", "slurm"}));
  auto& slurm = args->request.slurm;
  const std::string cluster = "Slurm (--emit slurm)";
  cmd->add_option("--partition", slurm.partition, "partition the cells run in")->group(cluster);
  cmd->add_option("--account", slurm.account, "account charged")->group(cluster);
  cmd->add_option("--time", slurm.time, "time limit per cell (M, H:M:S, D-H:M, ...)")->group(cluster);
  cmd->add_option("--mem", slurm.mem, "memory per cell (e.g. 4G)")->group(cluster);
  cmd->add_option("--throttle", slurm.throttle, "at most this many cells at once (the array's %N)")->group(cluster);
  cmd->add_option("--gpus-per-cell", slurm.gpus_per_cell, "GPUs each cell requests")->group(cluster);
  cmd->add_option("--sbatch", slurm.extra, "a further #SBATCH line, e.g. --sbatch=--qos=long (repeatable)")
      ->group(cluster);
  cmd->add_flag("--status", args->status,
                "print how many cells are done, running, failed (with the last line of their log) or pending, "
                "from the directory alone; runs nothing");
  cmd->add_flag("--json", args->json, "with --status: as JSON");
  cmd->callback([args] {
    const auto& experiment = exp::find_experiment(args->experiment);
    if (args->json && !args->status) throw std::invalid_argument("--json goes with --status");
    if (args->status) {
      const auto status = exp::grid_status(experiment, args->request.preset, args->request.out);
      fmt::print("{}", args->json ? status.to_json().dump(2) + "\n" : status.to_text());
      return;
    }
    const bool cluster_options = !args->request.slurm.partition.empty() || !args->request.slurm.account.empty() ||
                                 !args->request.slurm.time.empty() || !args->request.slurm.mem.empty() ||
                                 args->request.slurm.throttle != 0 || args->request.slurm.gpus_per_cell != 0 ||
                                 !args->request.slurm.extra.empty();
    if (cluster_options && args->request.emit != "slurm") {
      throw std::invalid_argument("--partition, --account, --time, --mem, --throttle, --gpus-per-cell and --sbatch "
                                  "go with --emit slurm");
    }
    exp::validate(args->request.slurm);
    const int failed = exp::run_grid(experiment, args->request);
    if (failed > 0) {
      throw std::runtime_error(fmt::format("{} cell(s) failed; their run.log files say why; rerun to retry them", failed));
    }
  });
}

}  // namespace pln::cli
