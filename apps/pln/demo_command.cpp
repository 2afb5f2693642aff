// `pln demo`: LN-Nets vs PLN-Nets vs a Tanh net on cos(3 pi x).

#include "commands.h"

#include <demo/demo.h>
#include <common/atomic_file.h>
#include <common/device.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <thread>

namespace pln::cli {

namespace {

struct DemoArgs {
  exp::DemoConfig config;
  int threads = 0;
  std::string out;
};

void run(const DemoArgs& args) {
  const auto& c = args.config;
  exp::validate(c);
  const int threads = args.threads > 0 ? args.threads
                                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(threads);
  fmt::print("pln demo: fit cos(3 pi x) on [-1, 1] with one hidden layer, no activation in the LN/PLN nets\n");
  fmt::print("config: steps={} widths={} group={} train_points={} test_points={} lr={} (Adam, cosine) "
             "seed={} threads={} device={}\n\n",
             c.steps, fmt::join(c.widths, ","), c.group, c.train_points, c.test_points, c.lr, c.seed,
             threads, c.device);
  fmt::print("{:<12} {:>6} {:>10} {:>10} {:>12} {:>8}\n", "model", "width", "max err", "rel L2",
             "train MSE", "seconds");
  nlohmann::json rows = nlohmann::json::array();
  const auto results = exp::run_demo(c, [&](const exp::DemoResult& r) {
    fmt::print("{:<12} {:>6} {:>10.4f} {:>10.4f} {:>12.3e} {:>8.1f}\n", r.model, r.width,
               r.max_error, r.rel_l2, r.final_loss, r.seconds);
    std::fflush(stdout);
    rows.push_back({{"model", r.model}, {"width", r.width}, {"max_error", r.max_error},
                    {"rel_l2", r.rel_l2}, {"final_loss", r.final_loss}, {"seconds", r.seconds}});
  });
  double ln_best = 1e300, pln_worst = 0;
  for (const auto& r : results) {
    if (r.model == "LN-Net") ln_best = std::min(ln_best, r.max_error);
    if (r.model.rfind("PLN", 0) == 0) pln_worst = std::max(pln_worst, r.max_error);
  }
  fmt::print("\nLN-Nets: max error >= {:.3f} at every width (one interior stationary point at most);\n"
             "PLN-Nets: max error <= {:.3f} with the same layers and no activation function.\n",
             ln_best, pln_worst);
  if (!args.out.empty()) {
    nlohmann::json doc = {{"config",
                           {{"steps", c.steps}, {"widths", c.widths}, {"group", c.group},
                            {"train_points", c.train_points}, {"test_points", c.test_points},
                            {"lr", c.lr}, {"seed", c.seed}, {"threads", threads}}},
                          {"device", exp::device_record(exp::parse_device(c.device))},
                          {"results", rows}};
    const auto path = std::filesystem::path(args.out) / "summary.json";
    exp::write_file_atomic(path, doc.dump(2) + "\n");
    fmt::print("wrote {}\n", path.string());
  }
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
  cmd->add_option("--threads", args->threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--out", args->out, "directory for summary.json (optional)");
  cmd->callback([args] { run(*args); });
}

}  // namespace pln::cli
