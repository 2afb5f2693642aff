#include "fourier/fourier.h"

#include "fourier/target.h"
#include "system/atomic_file.h"
#include "records/csv.h"
#include "records/step_log.h"
#include "records/tensor_csv.h"
#include "run/checkpoint.h"
#include "run/device.h"
#include "run/progress.h"
#include "sweep/cells.h"
#include "train/divergence_guard.h"
#include "train/schedule.h"

#include <fmt/format.h>
#include <pln/pln.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace pln::exp {

namespace fourier {

namespace {

using Clock = std::chrono::steady_clock;

// Every key of `pln fourier`.
struct FourierConfig {
  std::string layer, dtype, device;
  int64_t group = 0, width = 0, depth = 0, K = 0, n_train = 0, target_seed = 0, steps = 0, seed = 0;
  int64_t log_every = 1, checkpoint_every = 0;
  bool affine = true;
  Schedule schedule;
};

// The keys `pln fourier` takes, in config.json's order.
const Schema<FourierConfig>& schema() {
  using C = FourierConfig;
  const auto schedule = [](Field<Schedule> f) { return field(&C::schedule, std::move(f)); };
  static const Schema<C> schema(
      "fourier",
      {field(&C::layer, choice("layer", "pln", {"pln", "pls", "ln", "relu", "tanh", "sigmoid", "gelu", "sat", "silu"},
                               "the layer after each linear: a norm (the only nonlinearity) or an activation")),
       field(&C::group, integer("group", 4, at_least(1), "features per group of pln and pls")),
       field(&C::affine, boolean("affine", true, "the norm's per-feature weight and bias")),
       field(&C::width, integer("width", 256, at_least(1), "features of each hidden layer")),
       field(&C::depth, integer("depth", 1, at_least(1), "hidden layers")),
       field(&C::K, integer("K", 8, at_least(1), "Fourier modes of the target")),
       field(&C::n_train, integer("n_train", 0, at_least(0), "training points, at least 2K + 1 (0: 10 per mode)")),
       field(&C::target_seed, integer("target_seed", 0, "seed of the target's coefficients")),
       schedule(key::lr(3e-3)),
       schedule(key::schedule("cosine")),
       schedule(key::warmup(100)),
       schedule(key::lr_floor(0.01)),
       field(&C::steps, integer("steps", 3000, at_least(1), "full-batch Adam steps")),
       field(&C::seed, integer("seed", 0, "seed of the initialisation")),
       field(&C::dtype, choice("dtype", "float32", {"float32", "float64"}, "the network's and the points' dtype")),
       field(&C::log_every, integer("log_every", 1, at_least(1), "steps between rows of train.csv")),
       field(&C::checkpoint_every,
             integer("checkpoint_every", 1000, at_least(0), "steps between checkpoints (0: none)")),
       field(&C::device, key::device())},
      [](const C& c) {
        check_group_divides(c.layer, c.width, c.group);
        if (c.dtype == "float32") check_float32_range("lr", c.schedule.lr);
        // Sizes first: 2K + 1 and 10K must not overflow in the checks below.
        check_elements(fmt::format("10 training points per mode of K = {}", c.K), {10, c.K});
        check_elements("the training points x width", {c.n_train == 0 ? 10 * c.K : c.n_train, c.width});
        check_network_size("the network (depth x width^2 parameters)", c.depth, {c.width, c.width});
        if (c.n_train != 0 && c.n_train < 2 * c.K + 1) {
          throw ConfigError(fmt::format(
              "n_train ({}) cannot resolve K = {} modes; use at least 2K + 1 = {} (0: 10 per mode)", c.n_train, c.K,
              2 * c.K + 1));
        }
      });
  return schema;
}

// A validated configuration with its defaults resolved: ten training points per mode for n_train 0.
struct Setup : FourierConfig {
  torch::Dtype torch_dtype = torch::kFloat32;
};

Setup setup_from(const Config& record) {
  Setup s{schema().read(record)};
  s.torch_dtype = s.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
  if (s.n_train == 0) s.n_train = 10 * s.K;
  return s;
}

torch::nn::AnyModule layer_module(const Setup& s) {
  if (s.layer == "pln" || s.layer == "pls" || s.layer == "ln") {
    const int64_t g = s.layer == "ln" ? s.width : s.group;
    return torch::nn::AnyModule(pln::ParallelLN(
        pln::ParallelLNOptions(s.width, g).dim(2).affine(s.affine).centering(s.layer != "pls")));
  }
  if (s.layer == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (s.layer == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (s.layer == "sigmoid") return torch::nn::AnyModule(torch::nn::Sigmoid());
  if (s.layer == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (s.layer == "silu") return torch::nn::AnyModule(torch::nn::SiLU());
  return torch::nn::AnyModule(torch::nn::Functional([](torch::Tensor x) { return x * torch::rsqrt(1 + x * x); }));
}

void write_fit(torch::nn::Sequential& net, const FourierTarget& target, const torch::Tensor& x,
               const std::filesystem::path& path) {
  torch::NoGradGuard no_grad;
  const auto pred = net->forward(x).reshape(-1).to(torch::kCPU, torch::kFloat64).contiguous();
  const auto xs = x.reshape(-1).to(torch::kCPU, torch::kFloat64).contiguous();
  write_tensor_columns(path, {"x", "prediction", "target"}, {xs, pred, target(xs)});
}

Config run(const Config& c, const RunContext& ctx) {
  const Setup s = setup_from(c);
  const auto start = Clock::now();
  const auto target = make_target(s.K, static_cast<uint64_t>(s.target_seed));
  // The target is evaluated on the host (the same on every device), then moved.
  const auto x_host = training_points(s.n_train, s.torch_dtype), x_test_host = test_points(s.n_train, s.torch_dtype);
  const auto x = x_host.to(ctx.device), y = target(x_host).unsqueeze(1).to(ctx.device);
  const auto x_test = x_test_host.to(ctx.device), y_test = target(x_test_host).to(ctx.device);

  torch::manual_seed(static_cast<uint64_t>(s.seed));
  auto net = make_network(c);
  net->to(ctx.device);
  int64_t n_params = 0;
  for (const auto& p : net->parameters()) n_params += p.numel();
  fmt::print("target: {} modes, unit RMS; {} training points, {} test points\nnetwork ({} parameters):\n{}\n",
             s.K, s.n_train, x_test.size(0), n_params, c10::str(*net));

  const auto schedule = s.schedule.over(s.steps);
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(schedule.lr));
  StepLog log(ctx.out / "train.csv", {"step", "loss", "lr"}, 1000);
  DivergenceGuard guard("fourier");
  Checkpointer checkpoints(ctx, c, *net, optimizer, guard,
                           StateLayout{s.steps, 0, 0, {{"train.csv", {log.table().header}}},
                                       {{"loss", {{StateField::kNumber}}}}});
  TrainingState state;
  double loss_value = NAN;
  if (checkpoints.resume(state)) {
    log.restore(state.logs.at("train.csv"));
    loss_value = state.values.value("loss", double(NAN));
  }
  Progress progress("fourier", s.steps);
  const double elapsed_before = state.elapsed_seconds;
  while (state.step < s.steps) {
    const auto t0 = Clock::now();
    const double lr = schedule.at(state.step);
    set_learning_rate(optimizer, lr);
    optimizer.zero_grad();
    const auto loss = torch::mse_loss(net->forward(x), y);
    const double value = loss.item<double>();
    if (!guard.check(value, state.step, *net)) break;
    loss.backward();
    guard.keep(*net);
    optimizer.step();
    state.train_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    loss_value = value;
    const int64_t done = ++state.step;
    if (done % s.log_every == 0 || done == s.steps) log.add({double(done), value, lr});
    progress.update(done, fmt::format("loss {:.3e}", value));
    if (s.checkpoint_every > 0 && done % s.checkpoint_every == 0 && done != s.steps) {
      state.values = {{"loss", value}};
      state.logs["train.csv"] = log.table();
      state.elapsed_seconds = elapsed_before + std::chrono::duration<double>(Clock::now() - start).count();
      checkpoints.save(state);
    }
  }
  const int64_t done = state.step;
  progress.finish(fmt::format("loss {:.3e}", loss_value));
  log.flush();

  torch::NoGradGuard no_grad;
  const auto err = net->forward(x_test).reshape(-1).to(torch::kFloat64) - y_test.to(torch::kFloat64);
  const double rel_l2 = (err.norm() / y_test.to(torch::kFloat64).norm()).item<double>();
  const double max_err = err.abs().max().item<double>();
  write_fit(net, target, x_test, ctx.out / "fit.csv");
  return {{"rel_l2", rel_l2}, {"max_err", max_err}, {"final_loss", loss_value}, {"steps_done", done},
          {"diverged_at", guard.diverged_at()}, {"n_train_used", s.n_train}, {"n_params", n_params},
          {"seconds", elapsed_before + std::chrono::duration<double>(Clock::now() - start).count()},
          {"steps_per_s", state.train_seconds > 0 ? double(done) / state.train_seconds : 0.0}};
}

GridAxis models(const std::vector<std::pair<std::string, int64_t>>& which) {
  GridAxis axis{"model", {}};
  for (const auto& [layer, group] : which) {
    std::string label = layer == "pln" ? fmt::format("PLN({})", group)
                        : layer == "pls" ? fmt::format("PLS({})", group)
                        : layer == "ln"  ? "LN"
                        : layer == "relu" ? "ReLU"
                        : layer == "tanh" ? "Tanh"
                                          : layer;
    axis.values.push_back({label, Config{{"layer", layer}, {"group", group}}});
  }
  return axis;
}

std::map<std::string, GridSpec> grids() {
  const std::vector<std::pair<std::string, int64_t>> paper_models = {
      {"pln", 4}, {"pln", 8}, {"pls", 8}, {"ln", 4}, {"relu", 4}, {"tanh", 4}};
  std::map<std::string, GridSpec> g;
  g["smoke"] = {"LN-Net vs PLN(4)-Net on a K = 2 target, two widths", "smoke", Config::object(),
                {models({{"ln", 4}, {"pln", 4}}), integer_axis("width", {16, 32})}};
  g["cpu"] = {"6 layer kinds x widths 64-512 x K 4, 16 x lr 3e-3, 1e-2 x 3 seeds (288 cells, 2000 steps)",
              "cpu", Config{{"steps", 2000}},
              {models(paper_models), integer_axis("width", {64, 128, 256, 512}), integer_axis("K", {4, 16}),
               number_axis("lr", {3e-3, 1e-2}), integer_axis("seed", {0, 1, 2})}};
  g["paper"] = {"the original repository's grid: 6 layer kinds x 4 widths x K 4-32 x 3 learning rates x 5 seeds (1,440 cells)",
                "paper", Config::object(),
                {models(paper_models), integer_axis("width", {64, 128, 256, 512}),
                 integer_axis("K", {4, 8, 16, 32}), number_axis("lr", {1e-3, 3e-3, 1e-2}),
                 integer_axis("seed", {0, 1, 2, 3, 4})}};
  return g;
}

}  // namespace

torch::nn::Sequential make_network(const Config& c) {
  const Setup s = setup_from(c);
  torch::nn::Sequential net;
  for (int64_t d = 0; d < s.depth; ++d) {
    net->push_back(torch::nn::Linear(d == 0 ? 1 : s.width, s.width));
    net->push_back(layer_module(s));
  }
  net->push_back(torch::nn::Linear(s.width, 1));
  net->to(s.torch_dtype);
  return net;
}

}  // namespace fourier

Experiment fourier_experiment() {
  Experiment e("fourier", "fit dense Fourier series with PLN-Nets, LN-Nets and activation networks",
               fourier::schema().table());
  e.presets = {{"smoke", {{"width", 32}, {"K", 2}, {"steps", 300}, {"warmup", 20}, {"lr", 1e-2}}},
               {"cpu", {{"steps", 3000}, {"warmup", 100}}},
               {"paper", {{"steps", 10000}, {"warmup", 500}}}};
  e.grids = fourier::grids();
  e.run = fourier::run;
  e.resumable = true;
  e.metrics = {"rel_l2", "max_err", "final_loss", "seconds"};
  e.plot_grid = fourier::plot_grid;
  e.figure_inputs = fourier::figure_inputs;
  e.plot_run = fourier::plot_run;
  return e;
}

}  // namespace pln::exp
