// `pln <experiment> --preset smoke|cpu|paper [--set key=value ...] --out DIR`.

#include "commands.h"

#include <spec/experiment.h>
#include <spec/keys.h>
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
    // Checked by resolve_threads, whose message states the range (CLI11's
    // NonNegativeNumber prints the largest double).
    cmd->add_option("--threads", request->threads, "threads (default: all cores)");
    auto max_elements = std::make_shared<int64_t>(exp::kDefaultElementCeiling);
    cmd->add_option("--max-elements", *max_elements,
                    "the most elements one tensor the configuration sizes may hold (a ceiling against "
                    "exhausting memory)")
        ->capture_default_str();
    cmd->add_flag("--force", request->force,
                  "replace a finished run of another family or configuration in --out (its files are kept "
                  "aside until this run finishes)");
    if (experiment.resumable) {
      cmd->add_flag("--resume", request->resume,
                    "continue from the checkpoint in --out (written every epoch, or every checkpoint_every "
                    "steps) when it exists; it must hold the same configuration");
    }
    const auto* e = &experiment;
    cmd->callback([e, request, max_elements] {
      exp::set_element_ceiling(*max_elements);
      exp::run_experiment(*e, *request);
    });
  }
}

}  // namespace pln::cli
