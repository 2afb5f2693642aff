// Where a PINN training step's time goes, side by side in one run: the step
// of `pln pinn` (Taylor-mode forward, loss, backward, Adam) of each of
// Table 1's models at the same width and depth, its matrix products alone
// (the same torch::mm, addmm and mv calls on operands of the same sizes, the
// same for every model), and its fused jet kernels alone (the norms' for
// PLN(4), the activations' for the others). step/products is the cost of
// the step over the arithmetic it cannot avoid (1.0 is the floor);
// step/PLN(4) compares each model's step with PLN(4)'s. With --before, each
// activation model's step is also timed with its activations' jets taken by
// the composite ATen formulas (the code before the fused activation jets),
// alternated with the fused step. Min of N repetitions, every model's
// timings at a width and point count in alternation; each product is timed
// warm (see time_steps). "in
// step" is what the same products take inside the step, timed by a
// RecordFunction observer in steps of their own: its excess over products
// is the cost of operands the step left out of cache.
//
//   pln_bench_pinn_step [--points 1000,5000] [--boundary 0] [--width 128,256] [--depth 3] [--group 4]
//                       [--models pln4,sat,tanh,relu] [--before] [--threads 1] [--reps N] [--cpu-time] [--quick]

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "system/threads_and_memory.h"
#include "cpu/activation_jets.h"
#include "ops/activation_jet.h"
#include "cpu/jet_kernels.h"
#include "pinn/loss.h"
#include "system/provenance.h"
#include "system/start_up.h"
#include "timing.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Every timing reads pln::bench::clock_ms: the wall clock, or with --cpu-time
// the process's CPU time. One thread does all the work here (LibTorch,
// OpenBLAS and autograd's CPU engine run on the caller), so the two agree on
// an idle machine.
using pln::bench::clock_ms;
using pln::bench::elapsed_ms;
using namespace pln::exp::pinn;

// The products one step of PinnNet computes (network.cpp), on operands of
// the same shapes. A Linear(in, out) on a jet of P parts at N points: one mm
// forward (P N x in x out), and backward the input's gradient (P N x out x
// in) and the weight's (out x P N x in); for the scalar output (out = 1) two
// mv, the input's gradient being an outer product, an elementwise multiply
// left to the rest. The first layer's forward is one addmm on the values
// (their derivatives are the weight itself) and its backward the weight's
// gradient. The boundary's plain forward and backward run every layer on its
// few points.
class StepProducts {
 public:
  StepProducts(const NetSpec& spec, int64_t points, int64_t boundary_points) {
    const int64_t parts = 1 + 2 * spec.in_dim;
    std::vector<int64_t> widths = {spec.in_dim};
    for (int64_t b = 0; b < spec.depth; ++b) widths.push_back(spec.width);
    widths.push_back(1);
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      const int64_t in = widths[l], out = widths[l + 1];
      if (l == 0) {
        add_plain_layer(points, in, out, /*input_gradient=*/false);
      } else {
        add_jet_layer(points, parts, in, out);
      }
      add_plain_layer(boundary_points, in, out, /*input_gradient=*/l > 0);
    }
  }
  const std::vector<std::function<void()>>& all() const { return products_; }

 private:
  static torch::Tensor random(std::vector<int64_t> sizes) { return torch::randn(sizes, torch::kFloat64); }

  void add_jet_layer(int64_t points, int64_t parts, int64_t in, int64_t out) {
    const auto jet = random({parts * points, in}), grad = random({parts * points, out}), w = random({out, in});
    if (out == 1) {
      products_.push_back([=] { (void)torch::mv(jet, w[0]); });
      products_.push_back([=] { (void)torch::mv(jet.t(), grad.select(1, 0)); });
      return;
    }
    products_.push_back([=] { (void)torch::mm(jet, w.t()); });
    products_.push_back([=] { (void)torch::mm(grad, w); });
    products_.push_back([=] { (void)torch::mm(grad.t(), jet); });
  }

  void add_plain_layer(int64_t rows, int64_t in, int64_t out, bool input_gradient) {
    const auto x = random({rows, in}), w = random({out, in}), b = random({out}), grad = random({rows, out});
    products_.push_back([=] { (void)torch::addmm(b, x, w.t()); });
    products_.push_back([=] { (void)torch::mm(x.t(), grad); });
    if (input_gradient) products_.push_back([=] { (void)torch::mm(grad, w); });
  }

  std::vector<std::function<void()>> products_;
};

struct Timings {
  double step, in_step;
};

// The time the step's gemm and gemv calls take, summed over one step, from a
// RecordFunction observer (aten::mm, addmm, mv: what StepProducts times).
class ProductClock {
 public:
  ProductClock()
      : handle_(at::addGlobalCallback(at::RecordFunctionCallback(&ProductClock::enter, &ProductClock::leave))) {}
  ~ProductClock() { at::removeCallback(handle_); }
  static void reset() { total_ms_ = 0; }
  static double total_ms() { return total_ms_; }

 private:
  static bool is_product(const at::RecordFunction& fn) {
    const char* name = fn.name();
    return std::strcmp(name, "aten::mm") == 0 || std::strcmp(name, "aten::addmm") == 0 ||
           std::strcmp(name, "aten::mv") == 0;
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    if (is_product(fn)) started_ = clock_ms();
    return nullptr;
  }
  static void leave(const at::RecordFunction& fn, at::ObserverContext*) {
    if (is_product(fn)) {
      total_ms_ += clock_ms() - started_;
    }
  }
  static inline double started_ = 0;
  static inline double total_ms_ = 0;
  at::CallbackHandle handle_;
};

// A model of Table 1: PLN(4) (a norm, no activation) or an activation without a norm.
struct Model {
  std::string name, norm, act;
};

const std::vector<Model> kModels = {{"PLN(4)", "pln", "none"}, {"SAT", "none", "sat"},
                                    {"Tanh", "none", "tanh"},   {"ReLU", "none", "relu"},
                                    {"SiLU", "none", "silu"},   {"Sigmoid", "none", "sigmoid"}};

const Model& find_model(const std::string& key) {
  for (const auto& m : kModels) {
    std::string lower;
    for (char c : m.name) {
      if (std::isalnum(static_cast<unsigned char>(c))) lower += static_cast<char>(std::tolower(c));
    }
    if (key == lower) return m;
  }
  throw std::invalid_argument("unknown model '" + key + "' (pln4, sat, tanh, relu, silu, sigmoid)");
}

// The kernels' name of a PINN activation.
pln::cpu::JetActivation kernel_activation(const std::string& act) {
  return pln::ops::activation_jet_op::named(act).kernel;
}

// The steps of several networks of the same width and depth (`cases`: each
// model, its activations' jets fused or composite as its spec says), their
// common products, and each fused case's jet kernels alone, all timed in
// alternation, so that their ratios come from the same stretch of time.
struct StepTimings {
  std::vector<Timings> steps;
  std::vector<double> jets;  // per case; 0 for a composite case
  double products;
};

// The fused jet kernels of a network's hidden layers, forward and backward,
// on jets of the step's size: the norms' (PLN) and the activations'.
std::function<void()> fused_jets(const NetSpec& spec, int64_t rows) {
  const int64_t parts = 1 + 2 * spec.in_dim;
  const auto jet = torch::randn({parts, rows, spec.width}, torch::kFloat64) * 2;
  const auto grad = torch::randn_like(jet);
  auto out = torch::empty_like(jet), dx = torch::empty_like(jet);
  const pln::cpu::JetGeometry geometry{rows, spec.width, spec.group, spec.in_dim};
  const pln::cpu::ActivationJetShape shape{rows * spec.width, spec.in_dim};
  const bool norm = spec.norm != "none", act = spec.act != "none", centering = spec.norm != "pls";
  const auto activation = kernel_activation(act ? spec.act : "tanh");
  return [=]() mutable {
    for (int64_t b = 0; b < spec.depth; ++b) {
      if (norm) {
        pln::cpu::jet_forward(geometry, jet.data_ptr<double>(), out.data_ptr<double>(), spec.eps, centering);
        pln::cpu::jet_backward(geometry, grad.data_ptr<double>(), jet.data_ptr<double>(), dx.data_ptr<double>(),
                               spec.eps, centering);
      }
      if (act) {
        pln::cpu::activation_jet_forward(activation, shape, jet.data_ptr<double>(), out.data_ptr<double>());
        pln::cpu::activation_jet_backward(activation, shape, grad.data_ptr<double>(), jet.data_ptr<double>(),
                                          dx.data_ptr<double>());
      }
    }
  };
}

StepTimings time_steps(const std::vector<NetSpec>& cases, int64_t points, int64_t boundary, int reps,
                       double budget_ms) {
  const Problem problem = make_problem("helmholtz1d");
  const auto training = boundary > 0 ? training_points(problem, "deepxde", points, boundary, 1, torch::kFloat64)
                                     : training_points(problem, "ours", points, 2, 0, torch::kFloat64);
  const auto u_boundary = problem.exact(training.boundary);
  struct Trainer {
    PinnNet net;
    std::unique_ptr<torch::optim::Adam> optimizer;
  };
  std::vector<Trainer> trainers;
  std::vector<std::function<void()>> jets;
  for (const auto& spec : cases) {
    torch::manual_seed(0);  // a model's fused and composite cases start from the same network
    PinnNet net(spec, torch::kFloat64);
    auto optimizer = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(1e-3));
    trainers.push_back({net, std::move(optimizer)});
    jets.push_back(spec.fused_activation_jets ? fused_jets(spec, training.residual.size(0)) : nullptr);
  }
  pln::exp::DivergenceGuard guard("bench");
  const auto step = [&](Trainer& t) {
    if (!training_step(t.net, problem, training, u_boundary, {}, *t.optimizer, guard, 0)) {
      throw std::runtime_error("the training loss is not finite");
    }
  };
  const StepProducts products(cases.front(), training.residual.size(0), training.boundary.size(0));
  // Each product is timed right after a call of its own, with its operands
  // in cache: the sum of their minima is the products' floor, so step/products
  // is not flattered by products slowed by cold operands (in the step some
  // read operands saved long before).
  const auto& all = products.all();
  std::vector<double> best_product(all.size(), 1e300), best_jets(cases.size(), 1e300);
  std::vector<Timings> best(cases.size(), Timings{1e300, 1e300});
  for (size_t c = 0; c < cases.size(); ++c) {
    step(trainers[c]);
    if (jets[c]) jets[c]();
  }
  pln::bench::run_rounds(reps, budget_ms, [&] {
    for (size_t c = 0; c < cases.size(); ++c) {
      best[c].step = std::min(best[c].step, elapsed_ms([&] { step(trainers[c]); }));
      const ProductClock clock;
      ProductClock::reset();
      step(trainers[c]);
      best[c].in_step = std::min(best[c].in_step, ProductClock::total_ms());
    }
    for (size_t i = 0; i < all.size(); ++i) {
      all[i]();
      best_product[i] = std::min(best_product[i], elapsed_ms(all[i]));
    }
    for (size_t c = 0; c < cases.size(); ++c) {
      if (jets[c]) best_jets[c] = std::min(best_jets[c], elapsed_ms(jets[c]));
    }
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    if (!jets[c]) best_jets[c] = 0;
  }
  return {best, best_jets, std::accumulate(best_product.begin(), best_product.end(), 0.0)};
}

}  // namespace

int main(int argc, char** argv) {
  pln::exp::start_again_with(pln::exp::start_settings(pln::exp::start_state(argv)), argv);  // as `pln` does
  pln::exp::keep_freed_memory();
  std::vector<int64_t> points = {1000, 5000}, widths = {128};
  std::vector<std::string> model_keys = {"pln4", "sat", "tanh", "relu"};
  int64_t boundary = 0;
  NetSpec spec;
  int threads = 1, reps = 10;
  bool quick = false, before = false;
  CLI::App app{"PINN steps of Table 1's models against their matrix products and jet kernels"};
  app.add_option("--points", points, "interior points")->delimiter(',')->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--boundary", boundary,
                 "boundary points: 0, the two ends (points=ours); B > 0, DeepXDE's B (points=deepxde, the residual "
                 "taken at them too)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--width", widths, "hidden widths")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--depth", spec.depth, "hidden layers")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--group", spec.group, "PLN group size")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--models", model_keys, "models: pln4, sat, tanh, relu, silu, sigmoid")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--before", before, "also the activation models' step with the composite activation jets");
  app.add_option("--threads", threads, "threads (LibTorch and OpenBLAS)")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--reps", reps, "runs at least, the minimum counts")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_flag("--cpu-time", pln::bench::cpu_time(), "time by the process's CPU clock, not the wall clock (a shared machine)");
  app.add_flag("--quick", quick, "200 points and at most 3 runs (a test)");
  CLI11_PARSE(app, argc, argv);
  std::vector<Model> models;
  try {
    for (const auto& key : model_keys) models.push_back(find_model(key));
    for (const int64_t width : widths) {
      NetSpec s = spec;
      s.width = width;
      s.validate();
    }
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "pln_bench_pinn_step: {}\n", e.what());
    return 2;
  }
  if (quick) {
    points = {200};
    reps = std::min(reps, 3);
  }
  pln::exp::set_threads(threads);
  fmt::print("PINN step, 1-D Helmholtz, {} hidden layers, PLN group {}, {} boundary points, float64, Adam, {} "
             "thread(s), min of >= {} runs, {} time; kernels: {}; BLAS: {}\n",
             spec.depth, spec.group, boundary > 0 ? fmt::format("DeepXDE's {}", boundary) : "the 2 ends", threads,
             reps, pln::bench::cpu_time() ? "CPU" : "wall-clock", pln::cpu_kernels(), pln::exp::blas_description());
  fmt::print("{:>7} {:>5} {:>9} {:>7} | {:>9} {:>11} {:>10} {:>9} {:>9} | {:>10} {:>12} {:>10} {:>11}\n", "model",
             "width", "act jets", "points", "step ms", "products ms", "in step ms", "jets ms", "rest ms", "step/prod",
             "in step/prod", "jets/prod", "step/PLN(4)");
  for (const int64_t width : widths) {
    for (const int64_t n : points) {
      std::vector<NetSpec> cases;
      std::vector<const Model*> case_models;
      for (const auto& model : models) {
        NetSpec s = spec;
        s.width = width;
        s.norm = model.norm;
        s.act = model.act;
        cases.push_back(s);
        case_models.push_back(&model);
        if (before && model.act != "none") {
          s.fused_activation_jets = false;
          cases.push_back(s);
          case_models.push_back(&model);
        }
      }
      StepTimings t{};
      try {
        t = time_steps(cases, n, boundary, reps, quick ? 50 : 3000);
      } catch (const std::exception& e) {
        fmt::print(stderr, "pln_bench_pinn_step: width {}, {} points: {}\n", width, n, e.what());
        return 1;
      }
      double pln_step = 0;  // PLN(4)'s step at this width, or 0 where it is not timed
      for (size_t c = 0; c < cases.size(); ++c) {
        if (case_models[c]->name == "PLN(4)") pln_step = t.steps[c].step;
      }
      for (size_t c = 0; c < cases.size(); ++c) {
        const Model& model = *case_models[c];
        const Timings& timing = t.steps[c];
        const bool fused = cases[c].fused_activation_jets;
        const std::string jets_ms = fused ? fmt::format("{:.3f}", t.jets[c]) : "-";
        const std::string jets_ratio = fused ? fmt::format("{:.2f}", t.jets[c] / t.products) : "-";
        const std::string to_pln = pln_step > 0 ? fmt::format("{:.2f}", timing.step / pln_step) : "-";
        fmt::print("{:>7} {:>5} {:>9} {:>7} | {:>9.3f} {:>11.3f} {:>10.3f} {:>9} {:>9.3f} | {:>10.2f} {:>12.2f} {:>10} "
                   "{:>11}\n",
                   model.name, width, model.act == "none" ? "-" : (fused ? "fused" : "composite"), n, timing.step,
                   t.products, timing.in_step, jets_ms, timing.step - t.products - t.jets[c],
                   timing.step / t.products, timing.in_step / t.products, jets_ratio, to_pln);
      }
    }
  }
}
