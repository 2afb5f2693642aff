// `pln <experiment> --preset smoke|cpu|paper [--set key=value ...] --out DIR`.

#include "commands.h"

#include <spec/experiment.h>
#include <run/run.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

namespace pln::cli {

void add_experiment_commands(CLI::App& app) {
  for (const auto& experiment : exp::experiments()) {
    auto request = std::make_shared<exp::RunRequest>();
    request->preset = "cpu";
    auto* cmd = app.add_subcommand(experiment.name, experiment.description);
    cmd->footer(experiment.help());
    cmd->add_option("--preset", request->preset,
                    fmt::format("configuration to start from: {}", fmt::join(experiment.preset_names(), "|")))
        ->capture_default_str();
    cmd->add_option("--set", request->sets, "override keys: --set key=value [key=value ...] (repeatable)");
    cmd->add_option("--out", request->out, "run directory (config.json, summary.json, CSV records)")
        ->required();
    cmd->add_option("--threads", request->threads, "threads (default: all cores)")
        ->check(CLI::NonNegativeNumber);
    if (experiment.resumable) {
      cmd->add_flag("--resume", request->resume,
                    "continue from the checkpoint in --out (written every epoch, or every checkpoint_every "
                    "steps) when it exists; it must hold the same configuration");
    }
    const auto* e = &experiment;
    cmd->callback([e, request] { exp::run_experiment(*e, *request); });
  }
}

}  // namespace pln::cli
