// Where a PINN training step's time goes, side by side in one run: the step
// of `pln pinn` (Taylor-mode forward, loss, backward, Adam), its matrix
// products alone (the same torch::mm, addmm and mv calls on operands of the
// same sizes), and its fused jet kernels alone. step/products is the cost of
// the step over the arithmetic it cannot avoid (1.0 is the floor). Min of N
// repetitions, the three in alternation; each product is timed warm (see
// time_step). "in step" is what the same calls take inside the step, timed by
// a RecordFunction observer in steps of their own: its excess over products
// is the cost of operands the step left out of cache.
//
//   pln_bench_pinn_step [--points 1000,5000] [--width 128] [--depth 3] [--group 4]
//                       [--threads 1] [--reps N] [--quick]

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "system/threads_and_memory.h"
#include "cpu/jet_kernels.h"
#include "pinn/loss.h"
#include "system/provenance.h"
#include "system/start_up.h"
#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

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
  double step, products, in_step, jets;
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
    if (is_product(fn)) started_ = std::chrono::steady_clock::now();
    return nullptr;
  }
  static void leave(const at::RecordFunction& fn, at::ObserverContext*) {
    if (is_product(fn)) {
      total_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    }
  }
  static inline std::chrono::steady_clock::time_point started_;
  static inline double total_ms_ = 0;
  at::CallbackHandle handle_;
};

Timings time_step(const NetSpec& spec, int64_t points, int reps, double budget_ms) {
  torch::manual_seed(0);
  const Problem problem = make_problem("helmholtz1d");
  PinnNet net(spec, torch::kFloat64);
  const auto training = training_points(problem, "ours", points, 2, 0, torch::kFloat64);
  const auto& x_boundary = training.boundary;
  const auto u_boundary = problem.exact(x_boundary);
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-3));
  pln::exp::DivergenceGuard guard("bench");
  const auto step = [&] {
    if (!training_step(net, problem, training, u_boundary, {}, optimizer, guard, 0)) {
      throw std::runtime_error("the training loss is not finite");
    }
  };
  const StepProducts products(spec, points, x_boundary.size(0));

  // The fused jet kernels of the step's norms, forward and backward, on jets
  // of the step's size.
  const int64_t parts = 1 + 2 * spec.in_dim;
  const auto jet = torch::randn({parts, points, spec.width}, torch::kFloat64);
  const auto grad = torch::randn_like(jet);
  auto out = torch::empty_like(jet), dx = torch::empty_like(jet);
  const pln::cpu::JetGeometry geometry{points, spec.width, spec.group, spec.in_dim};
  const auto jets = [&] {
    for (int64_t b = 0; b < spec.depth; ++b) {
      pln::cpu::jet_forward(geometry, jet.data_ptr<double>(), out.data_ptr<double>(), spec.eps, true);
      pln::cpu::jet_backward(geometry, grad.data_ptr<double>(), jet.data_ptr<double>(), dx.data_ptr<double>(),
                             spec.eps, true);
    }
  };
  // Each product is timed right after a call of its own, with its operands
  // in cache: the sum of their minima is the products' floor, so step/products
  // is not flattered by products slowed by cold operands (in the step some
  // read operands saved long before).
  const auto& all = products.all();
  std::vector<double> best_product(all.size(), 1e300);
  double best_step = 1e300, best_in_step = 1e300, best_jets = 1e300, spent = 0;
  step();
  jets();
  for (int r = 0; r < 5 * reps; ++r) {
    spent += elapsed_ms([&] {
      best_step = std::min(best_step, elapsed_ms(step));
      {
        const ProductClock clock;
        ProductClock::reset();
        step();
        best_in_step = std::min(best_in_step, ProductClock::total_ms());
      }
      for (size_t i = 0; i < all.size(); ++i) {
        all[i]();
        best_product[i] = std::min(best_product[i], elapsed_ms(all[i]));
      }
      best_jets = std::min(best_jets, elapsed_ms(jets));
    });
    if (r + 1 >= reps && spent >= budget_ms) break;
  }
  return {best_step, std::accumulate(best_product.begin(), best_product.end(), 0.0), best_in_step, best_jets};
}

}  // namespace

int main(int argc, char** argv) {
  pln::exp::start_again_with(pln::exp::start_settings(pln::exp::start_state(argv)), argv);  // as `pln` does
  pln::exp::keep_freed_memory();
  std::vector<int64_t> points = {1000, 5000};
  NetSpec spec;
  int threads = 1, reps = 10;
  bool quick = false;
  CLI::App app{"A PINN step against its matrix products and jet kernels"};
  app.add_option("--points", points, "interior points")->delimiter(',')->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--width", spec.width, "hidden width")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--depth", spec.depth, "hidden layers")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--group", spec.group, "PLN group size")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--threads", threads, "threads (LibTorch and OpenBLAS)")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--reps", reps, "runs at least, the minimum counts")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_flag("--quick", quick, "200 points and at most 3 runs (a test)");
  CLI11_PARSE(app, argc, argv);
  try {
    spec.validate();
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "pln_bench_pinn_step: {}\n", e.what());
    return 2;
  }
  if (quick) {
    points = {200};
    reps = std::min(reps, 3);
  }
  pln::exp::set_threads(threads);
  fmt::print("PINN step, 1-D Helmholtz, width {}, {} hidden PLN({}) layers, float64, Adam, {} thread(s), "
             "min of >= {} runs; BLAS: {}\n",
             spec.width, spec.depth, spec.group, threads, reps, pln::exp::blas_description());
  fmt::print("{:>7} | {:>9} {:>11} {:>10} {:>9} {:>9} | {:>10} {:>12} {:>10}\n", "points", "step ms",
             "products ms", "in step ms", "jets ms", "rest ms", "step/prod", "in step/prod", "jets/prod");
  for (const int64_t n : points) {
    Timings t{};
    try {
      t = time_step(spec, n, reps, quick ? 50 : 3000);
    } catch (const std::exception& e) {
      fmt::print(stderr, "pln_bench_pinn_step: {} points: {}\n", n, e.what());
      return 1;
    }
    fmt::print("{:>7} | {:>9.3f} {:>11.3f} {:>10.3f} {:>9.3f} {:>9.3f} | {:>10.2f} {:>12.2f} {:>10.2f}\n", n,
               t.step, t.products, t.in_step, t.jets, t.step - t.products - t.jets, t.step / t.products,
               t.in_step / t.products, t.jets / t.products);
  }
}
