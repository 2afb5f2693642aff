#include "demo/demo.h"

#include "system/atomic_file.h"
#include "records/csv.h"
#include "run/device.h"
#include "records/gnuplot.h"
#include "records/run_state.h"
#include "run/run.h"
#include "train/schedule.h"
#include "train/divergence_guard.h"

#include <fmt/format.h>
#include <pln/pln.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

namespace pln::exp {

namespace {

torch::nn::Sequential make_net(const std::string& kind, int64_t width, int64_t group) {
  torch::nn::Sequential net(torch::nn::Linear(1, width));
  if (kind == "ln") {
    net->push_back(pln::ParallelLN(pln::ParallelLNOptions(width, width).dim(2)));
  } else if (kind == "pln") {
    net->push_back(pln::ParallelLN(pln::ParallelLNOptions(width, group).dim(2)));
  } else {
    net->push_back(torch::nn::Tanh());
  }
  net->push_back(torch::nn::Linear(width, 1));
  return net;
}

torch::Tensor target(const torch::Tensor& x) { return torch::cos(3 * M_PI * x); }

// Cosine from lr to lr / 100, no warmup: what config.json records (to_config).
Schedule demo_schedule(const DemoConfig& c) {
  Schedule s;
  s.kind = "cosine";
  s.lr = c.lr;
  s.warmup = 0;
  s.floor = 0.01;
  return s;
}

DemoResult train(const std::string& kind, const std::string& label, int64_t width,
                 const DemoConfig& c, const torch::Device& device) {
  torch::manual_seed(c.seed);
  auto net = make_net(kind, width, c.group);
  net->to(device);
  const auto x = torch::linspace(-1, 1, c.train_points).unsqueeze(1).to(device);
  const auto y = target(x);
  const Schedule schedule = demo_schedule(c).over(c.steps);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(schedule.lr));
  DivergenceGuard guard(fmt::format("demo: {} (width {})", label, width));
  const auto start = std::chrono::steady_clock::now();
  double loss_value = 0;
  for (int64_t step = 0; step < c.steps; ++step) {
    set_learning_rate(opt, schedule.at(step));
    opt.zero_grad();
    auto loss = torch::mse_loss(net->forward(x), y);
    loss_value = loss.item<double>();
    if (!guard.check(loss_value, step, *net)) {
      throw std::runtime_error(fmt::format("demo: training of {} (width {}) diverged at step {} (loss {}); "
                                           "lower --lr", label, width, step, loss_value));
    }
    loss.backward();
    guard.keep(*net);
    opt.step();
  }
  DemoResult r;
  r.model = label;
  r.width = width;
  r.final_loss = loss_value;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  torch::NoGradGuard no_grad;
  const auto xt = torch::linspace(-1, 1, c.test_points).unsqueeze(1).to(device);
  const auto yt = target(xt);
  const auto ft = net->forward(xt);
  const auto err = ft - yt;
  r.max_error = err.abs().max().item<double>();
  r.rel_l2 = (err.norm() / yt.norm()).item<double>();
  const auto fit = ft.reshape(-1).to(torch::kCPU, torch::kFloat64).contiguous();
  r.fit.assign(fit.data_ptr<double>(), fit.data_ptr<double>() + fit.numel());
  return r;
}

// A number as records write it: shortest round-trip text; "inf", "-inf", "nan" when not finite.
std::string number_cell(double v) { return fmt::format("{}", v); }

std::string column_name(const DemoResult& r) { return fmt::format("{} {}", r.model, r.width); }

void plot_run(const std::filesystem::path& dir, const std::filesystem::path& out) {
  if (!std::filesystem::exists(dir / "fit.csv")) {
    throw std::runtime_error(dir.string() + " is not a finished demo run (no fit.csv)");
  }
  // Columns 3.. are the networks, "<model> <width>": one panel per model.
  const CsvTable fit = read_csv(dir / "fit.csv");
  std::vector<std::string> models;
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> columns;  // model -> (column, width)
  for (size_t i = 2; i < fit.header.size(); ++i) {
    const auto& name = fit.header[i];
    const auto space = name.rfind(' ');
    const std::string model = name.substr(0, space), width = space == std::string::npos ? "" : name.substr(space + 1);
    if (!columns.count(model)) models.push_back(model);
    columns[model].emplace_back(i + 1, width);
  }
  const std::string data = gnuplot_quote((dir / "fit.csv").string());
  std::string body = fmt::format("set datafile separator ','\nset grid\nset multiplot layout 1,{}\n"
                                 "set xlabel 'x'\nset yrange [-1.6:1.6]\nset key outside bottom center horizontal\n",
                                 std::max<size_t>(1, models.size()));
  for (const auto& model : models) {
    body += fmt::format("set title {}\nplot {} skip 1 using 1:2 with lines dt 2 lc 'black' title 'cos(3 pi x)'",
                        gnuplot_quote(model), data);
    for (const auto& [column, width] : columns[model]) {
      body += fmt::format(", '' skip 1 using 1:{} with lines lw 1.5 title {}", column, gnuplot_quote("width " + width));
    }
    body += "\n";
  }
  body += "unset multiplot\n";
  std::filesystem::create_directories(out);
  render_figure(out / "fit", body, 450 * static_cast<int>(std::max<size_t>(1, models.size())), 420);
}

}  // namespace

void validate(const DemoConfig& c) {
  if (c.steps < 1) throw std::invalid_argument("demo: steps must be >= 1, got " + std::to_string(c.steps));
  if (c.group < 1) throw std::invalid_argument("demo: group must be >= 1, got " + std::to_string(c.group));
  if (c.widths.empty()) throw std::invalid_argument("demo: widths must name at least one width");
  for (int64_t w : c.widths) check_group_divides("pln", w, c.group);
  if (c.train_points < 2 || c.test_points < 2) {
    throw std::invalid_argument("demo: train_points and test_points must be >= 2");
  }
  if (!(c.lr > 0) || !std::isfinite(c.lr)) {
    throw std::invalid_argument("demo: lr must be a positive finite number, got " + std::to_string(c.lr));
  }
  (void)parse_device(c.device);
}

Config to_config(const DemoConfig& c) {
  const Schedule schedule = demo_schedule(c);
  return {{"steps", c.steps}, {"widths", c.widths}, {"group", c.group}, {"train_points", c.train_points},
          {"test_points", c.test_points}, {"lr", c.lr}, {"schedule", schedule.kind}, {"warmup", schedule.warmup},
          {"lr_floor", schedule.floor}, {"seed", c.seed}, {"device", c.device}};
}

std::vector<std::string> demo_overrides(const DemoConfig& c) {
  const Config config = to_config(c), defaults = to_config(DemoConfig{});
  std::vector<std::string> sets;
  for (const auto& item : config.items()) {
    if (item.value() != defaults.at(item.key())) sets.push_back(item.key() + "=" + value_text(item.value()));
  }
  return sets;
}

std::vector<DemoResult> run_demo(const DemoConfig& c,
                                 const std::function<void(const DemoResult&)>& on_done) {
  validate(c);
  const torch::Device device = parse_device(c.device);
  std::vector<DemoResult> results;
  auto add = [&](DemoResult r) {
    if (on_done) on_done(r);
    results.push_back(std::move(r));
  };
  const std::string pln_label = "PLN(" + std::to_string(c.group) + ")-Net";
  for (int64_t w : c.widths) add(train("ln", "LN-Net", w, c, device));
  for (int64_t w : c.widths) add(train("pln", pln_label, w, c, device));
  add(train("tanh", "Tanh-Net", c.widths.front(), c, device));
  return results;
}

Config demo_summary(const std::vector<DemoResult>& results) {
  double ln_best = INFINITY, pln_worst = -INFINITY, tanh = NAN, seconds = 0;
  Config rows = Config::array();
  for (const auto& r : results) {
    if (r.model == "LN-Net") ln_best = std::min(ln_best, r.max_error);
    if (r.model.rfind("PLN", 0) == 0) pln_worst = std::max(pln_worst, r.max_error);
    if (r.model == "Tanh-Net") tanh = r.max_error;
    seconds += r.seconds;
    rows.push_back({{"model", r.model}, {"width", r.width}, {"max_err", r.max_error}, {"rel_l2", r.rel_l2},
                    {"final_loss", r.final_loss}, {"seconds", r.seconds}});
  }
  return {{"ln_best_max_err", ln_best}, {"pln_worst_max_err", pln_worst}, {"tanh_max_err", tanh},
          {"seconds", seconds}, {"results", rows}};
}

void write_demo_records(const std::filesystem::path& out, const DemoConfig& c,
                        const std::vector<DemoResult>& results) {
  CsvTable models{{"model", "width", "max_err", "rel_l2", "final_loss", "seconds"}, {}};
  for (const auto& r : results) {
    models.rows.push_back({r.model, std::to_string(r.width), number_cell(r.max_error), number_cell(r.rel_l2),
                           number_cell(r.final_loss), number_cell(r.seconds)});
  }
  write_file_atomic(out / "models.csv", to_csv(models));
  CsvTable fit{{"x", "target"}, {}};
  for (const auto& r : results) fit.header.push_back(column_name(r));
  // The test grid and target as train() evaluates them (float), in double.
  const auto x32 = torch::linspace(-1, 1, c.test_points);
  const auto xt = x32.to(torch::kFloat64), yt = target(x32).to(torch::kFloat64);
  for (int64_t i = 0; i < c.test_points; ++i) {
    std::vector<std::string> row = {number_cell(xt[i].item<double>()), number_cell(yt[i].item<double>())};
    for (const auto& r : results) row.push_back(number_cell(r.fit.at(static_cast<size_t>(i))));
    fit.rows.push_back(std::move(row));
  }
  write_file_atomic(out / "fit.csv", to_csv(fit));
}

Config run_demo_recorded(const DemoConfig& c, int threads, const std::filesystem::path& out,
                         const std::function<void(const DemoResult&)>& on_done, bool force) {
  validate(c);
  // The demo's directory is a run directory like any other: claimed, and a
  // finished run in it kept until this one is (see take_run_directory).
  std::optional<RunDirectory> directory;
  std::optional<RunningMarker> running;
  if (!out.empty()) {
    directory.emplace(take_run_directory(out, "demo", to_config(c), false, force));
    running.emplace(out);
    write_run_config(out, "demo", "default", demo_overrides(c), threads, to_config(c));
  }
  const auto results = run_demo(c, on_done);
  const Config summary = demo_summary(results);
  if (!out.empty()) {
    write_demo_records(out, c, results);
    write_summary(out, "demo", summary);
    directory->finish();
  }
  return summary;
}

Experiment demo_experiment() {
  Experiment e;
  e.name = "demo";
  e.description = "LN-Nets vs PLN-Nets vs a Tanh net on cos(3 pi x) (`pln demo`)";
  e.metrics = {"ln_best_max_err", "pln_worst_max_err", "tanh_max_err", "seconds"};
  e.plot_run = plot_run;
  return e;
}

}  // namespace pln::exp
