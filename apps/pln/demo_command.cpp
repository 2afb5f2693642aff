// `pln demo`: LN-Nets vs PLN-Nets vs a Tanh net on cos(3 pi x). With --out,
// the run's records are those of every experiment run (run/run.h).

#include "commands.h"

#include <run/run.h>
#include <system/threads_and_memory.h>
#include <demo/demo.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

namespace pln::cli {

namespace {

struct DemoArgs {
  exp::DemoConfig config;
  int threads = 0;
  std::string out;
  bool force = false;
};

void run(const DemoArgs& args) {
  const auto& c = args.config;
  exp::validate(c);
  const int threads = exp::resolve_threads(args.threads);
  exp::set_threads(threads);
  fmt::print("pln demo: fit cos(3 pi x) on [-1, 1] with one hidden layer, no activation in the LN/PLN nets\n");
  fmt::print("config: steps={} widths={} group={} train_points={} test_points={} lr={} (Adam, cosine) "
             "seed={} threads={} device={}\n\n",
             c.steps, fmt::join(c.widths, ","), c.group, c.train_points, c.test_points, c.lr, c.seed,
             threads, c.device);
  fmt::print("{:<12} {:>6} {:>10} {:>10} {:>12} {:>8}\n", "model", "width", "max err", "rel L2",
             "train MSE", "seconds");
  const std::filesystem::path out = args.out;
  const exp::Config summary = exp::run_demo_recorded(c, threads, out, [&](const exp::DemoResult& r) {
    fmt::print("{:<12} {:>6} {:>10.4f} {:>10.4f} {:>12.3e} {:>8.1f}\n", r.model, r.width,
               r.max_error, r.rel_l2, r.final_loss, r.seconds);
    std::fflush(stdout);
  }, args.force);
  fmt::print("\nLN-Nets: max error >= {:.3f} at every width (one interior stationary point at most);\n"
             "PLN-Nets: max error <= {:.3f} with the same layers and no activation function.\n",
             summary.at("ln_best_max_err").get<double>(), summary.at("pln_worst_max_err").get<double>());
  if (!out.empty()) fmt::print("wrote {}\n", (out / "summary.json").string());
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "LN-Nets vs PLN-Nets vs Tanh on cos(3 pi x), in under a minute");
  cmd->add_option("--steps", args->config.steps, "Adam steps per model")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--widths", args->config.widths, "hidden widths")->capture_default_str()->delimiter(',');
  cmd->add_option("--group", args->config.group, "features per PLN group")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lr", args->config.lr, "peak learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--train-points", args->config.train_points, "training points")->capture_default_str();
  cmd->add_option("--seed", args->config.seed, "random seed")->capture_default_str();
  cmd->add_option("--device", args->config.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", args->threads, "threads (default: all cores)");  // resolve_threads checks it
  cmd->add_option("--out", args->out,
                  "directory for the run's records: config.json, summary.json, models.csv, fit.csv (optional); "
                  "`pln plot DIR` draws fit.png");
  cmd->add_flag("--force", args->force,
                "replace a finished run of other settings in --out (kept aside until this one finishes)");
  cmd->callback([args] { run(*args); });
}

}  // namespace pln::cli
