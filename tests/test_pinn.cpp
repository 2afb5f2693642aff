// The PINN family (experiments/pinn/): problems, the Taylor-mode network, the
// output NTK, runs, and its grids (Table 1's search axes, the CPU search's long
// stage checked against the shipped records of its coarse stage).

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <pinn/evaluation.h>
#include <pinn/network.h>
#include <pinn/ntk.h>
#include <pinn/problem.h>
#include <pln/kernels.h>
#include <records/csv.h>
#include <sweep/check_results.h>
#include <system/provenance.h>
#include <run/run.h>
#include <spec/config.h>
#include <spec/experiment.h>
#include <sweep/cells.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;
using test::slurp;

std::set<std::string> labels_of(const GridSpec& spec, const std::string& axis) {
  std::set<std::string> labels;
  for (const auto& cell : expand_grid(spec)) labels.insert(cell.labels.at(axis));
  return labels;
}

// `table` is the authors' search at their framework's protocol; `table-ours`
// the same question at this project's protocol.
TEST(PinnGrids, TableIsTheAuthorsSearchAtTheirProtocol) {
  const auto& pinn = find_experiment("pinn");
  const auto& table = find_grid(pinn, "table");
  EXPECT_EQ(table.preset, "original");
  const auto original = resolve_config(pinn, "original", {});
  EXPECT_EQ(original["points"].get<std::string>(), "deepxde");
  EXPECT_EQ(original["n_interior"].get<int64_t>(), 5000);
  EXPECT_EQ(original["n_boundary"].get<int64_t>(), 100);
  EXPECT_EQ(original["schedule"].get<std::string>(), "constant");
  EXPECT_EQ(original["dtype"].get<std::string>(), "float64");
  EXPECT_EQ(original["steps"].get<int64_t>(), 6000);
  EXPECT_EQ(original["eval_every"].get<int64_t>(), 10);
  EXPECT_EQ(labels_of(table, "model"), (std::set<std::string>{"PLN(4)", "SAT", "Tanh", "ReLU"}));
  EXPECT_EQ(labels_of(table, "width"), (std::set<std::string>{"128", "256"}));
  EXPECT_EQ(labels_of(table, "depth"), (std::set<std::string>{"2", "4", "6"}));
  EXPECT_EQ(labels_of(table, "pde_bc"), (std::set<std::string>{"10-1", "3-1", "1-1", "1-3", "1-10"}));
  EXPECT_EQ(labels_of(table, "optimizer_lr"),
            (std::set<std::string>{"adam 0.0001", "adam 0.0003", "adam 3e-05", "adam 1e-05", "sgd 0.001",
                                   "sgd 0.0001", "sgd 0.0003", "sgd 3e-05", "sgd 1e-05"}));
  EXPECT_EQ(labels_of(table, "seed"), (std::set<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(expand_grid(table).size(), 4u * 2 * 3 * 5 * 9 * 5);
  // The coarse CPU stage runs at the same protocol, on a subset of the axes.
  const auto& coarse = find_grid(pinn, "table-original-cpu");
  EXPECT_EQ(coarse.preset, "original");
  for (const auto& axis : {"model", "depth", "pde_bc", "optimizer_lr"}) {
    const auto sub = labels_of(coarse, axis), all = labels_of(table, axis);
    EXPECT_TRUE(std::includes(all.begin(), all.end(), sub.begin(), sub.end())) << axis;
  }

  const auto& ours = find_grid(pinn, "table-ours");
  EXPECT_EQ(ours.preset, "paper");
  EXPECT_EQ(resolve_config(pinn, "paper", {})["points"].get<std::string>(), "ours");
  EXPECT_EQ(labels_of(ours, "depth"), (std::set<std::string>{"2", "3", "4"}));
  EXPECT_EQ(labels_of(ours, "bc_weight"), (std::set<std::string>{"10", "1", "0.1"}));
  EXPECT_EQ(labels_of(ours, "optimizer"), (std::set<std::string>{"adam", "sgd"}));
  EXPECT_EQ(expand_grid(ours).size(), 4u * 2 * 3 * 3 * 2 * 3 * 5);
  // Table 1's networks have no normalisation layer besides PLN(4).
  for (const auto* grid : {&table, &ours}) {
    for (const auto& cell : expand_grid(*grid)) {
      const auto& sets = cell.sets;
      const bool pln = std::find(sets.begin(), sets.end(), "norm=pln") != sets.end();
      EXPECT_TRUE(pln || std::find(sets.begin(), sets.end(), "norm=none") != sets.end()) << cell.id;
    }
  }
}

TEST(PinnGrids, CpuSearchGivesEveryModelTheSameBudget) {
  const auto& pinn = find_experiment("pinn");
  for (const char* name : {"table-cpu", "table-cpu-long", "table-original-cpu", "table-original-cpu-final-6000"}) {
    std::map<std::string, int> cells_per_model;
    for (const auto& cell : expand_grid(find_grid(pinn, name))) ++cells_per_model[cell.labels.at("model")];
    ASSERT_EQ(cells_per_model.size(), 4u) << name;
    for (const auto& [model, n] : cells_per_model) EXPECT_EQ(n, cells_per_model.begin()->second) << name << " " << model;
  }
}

// A later stage trains what its coarse stage found best: each model's
// settings (`keys`) in the stage's model axis are those of its cell with the
// lowest `metric` in the coarse stage's shipped records (results/pinn-<coarse>/).
void expect_stage_trains_coarse_best(const std::string& coarse, const std::string& metric, const std::string& stage,
                                     const std::vector<std::string>& keys) {
  SCOPED_TRACE(stage);
  const fs::path records_file = fs::path(pln_test_source_dir) / "results" / ("pinn-" + coarse) / "records.csv";
  if (!fs::exists(records_file)) GTEST_SKIP() << records_file << " is not shipped in this checkout";
  const auto records = read_csv(records_file);
  std::map<std::string, std::pair<double, size_t>> best;  // model -> (error, row)
  for (size_t r = 0; r < records.rows.size(); ++r) {
    const double err = number_value(records.get(r, metric));
    auto& b = best.try_emplace(records.get(r, "model"), std::numeric_limits<double>::infinity(), 0).first->second;
    if (std::isfinite(err) && err < b.first) b = {err, r};
  }
  const auto& grid = find_grid(find_experiment("pinn"), stage);
  ASSERT_EQ(grid.axes.front().name, "model");
  ASSERT_EQ(grid.axes.front().values.size(), best.size());
  for (const auto& value : grid.axes.front().values) {
    SCOPED_TRACE(value.label);
    ASSERT_TRUE(best.count(value.label));
    const size_t row = best.at(value.label).second;
    for (const auto& key : keys) {
      SCOPED_TRACE(key);
      const auto& chosen = value.overrides.at(key);
      if (chosen.is_string()) {
        EXPECT_EQ(chosen.get<std::string>(), records.get(row, key));
      } else {
        EXPECT_EQ(chosen.get<double>(), number_value(records.get(row, key)));
      }
    }
  }
}

TEST(PinnGrids, LongStageTrainsTheCoarseStagesBestConfigurations) {
  expect_stage_trains_coarse_best("table-cpu", "rel_l2", "table-cpu-long", {"depth", "bc_weight", "optimizer", "lr"});
}

TEST(PinnGrids, OriginalFinalStageTrainsTheCoarseStagesBestSettings) {
  const std::vector<std::string> keys = {"depth", "pde_weight", "bc_weight", "optimizer", "lr"};
  expect_stage_trains_coarse_best("table-original-cpu", "rel_l2_train", "table-original-cpu-final", keys);
  expect_stage_trains_coarse_best("table-original-cpu", "rel_l2_train", "table-original-cpu-final-6000", keys);
  expect_stage_trains_coarse_best("table-original-cpu", "rel_l2_train", "table-original-cpu-ablation", keys);
}

// The final stage at the framework's step count: the same cells (ids and
// settings) as the final stage, each resolving to 6,000 steps where the
// final stage's resolve to 1,000, and to nothing else that differs.
TEST(PinnGrids, FinalStageAtSixThousandStepsIsTheFinalStageAtTheFrameworksSteps) {
  const auto& pinn = find_experiment("pinn");
  const auto& final = find_grid(pinn, "table-original-cpu-final");
  const auto& long_final = find_grid(pinn, "table-original-cpu-final-6000");
  EXPECT_EQ(long_final.preset, final.preset);
  const auto cells = expand_grid(final), long_cells = expand_grid(long_final);
  ASSERT_EQ(long_cells.size(), 40u);
  ASSERT_EQ(long_cells.size(), cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    SCOPED_TRACE(cells[i].id);
    EXPECT_EQ(long_cells[i].id, cells[i].id);
    auto config = resolve_config(pinn, final.preset, cells[i].sets);
    const auto long_config = resolve_config(pinn, long_final.preset, long_cells[i].sets);
    EXPECT_EQ(config["steps"].get<int64_t>(), 1000);
    EXPECT_EQ(long_config["steps"].get<int64_t>(), 6000);
    config["steps"] = 6000;
    EXPECT_EQ(long_config, config);
  }
}

// ------------------------------------------------------------- PINN pieces

TEST(PinnProblem, PointSetsAndExactSolution) {
  EXPECT_DOUBLE_EQ(pinn::radical_inverse2(1), 0.5);
  EXPECT_DOUBLE_EQ(pinn::radical_inverse2(6), 0.375);
  for (const char* name : {"helmholtz1d", "helmholtz2d"}) {
    const auto p = pinn::make_problem(name);
    const auto x = p.interior(100, torch::kDouble);
    EXPECT_EQ(x.sizes(), (std::vector<int64_t>{100, p.dim}));
    EXPECT_LT(x.abs().max().item<double>(), 1.0);
    const auto b = p.boundary(p.dim == 1 ? 2 : 40, torch::kDouble);
    EXPECT_TRUE(torch::allclose(std::get<0>(b.abs().max(1)), torch::ones({b.size(0)}, torch::kDouble)));
    EXPECT_LT(p.exact(b).abs().max().item<double>(), 1e-12);
    // The exact solution satisfies the PDE: its Laplacian is -(sum of k^2) u.
    const double k2 = p.dim == 1 ? M_PI * M_PI : 17 * M_PI * M_PI;
    const auto u = p.exact(x);
    EXPECT_LT(p.residual(-k2 * u, u, x).abs().max().item<double>(), 1e-9);
  }
  EXPECT_NE(error_of([] { pinn::make_problem("helmholtz1d").boundary(4, torch::kDouble); }).find("exactly 2 boundary points"), std::string::npos);
  EXPECT_NE(error_of([] { pinn::make_problem("poisson"); }).find("one of helmholtz1d|helmholtz2d, got 'poisson'"), std::string::npos);
}

// DeepXDE's default points for Interval(-1, 1), computed here another way:
// the radical inverse by reversing the binary digits of i as text, and the
// first draws of numpy's `np.random.seed(1); np.random.choice([-1, 1], 8)`.
TEST(PinnProblem, DeepxdePointsAreTheAuthorsFrameworks) {
  const auto reversed_binary = [](int64_t i) {
    std::string digits;
    for (; i > 0; i /= 2) digits += char('0' + i % 2);  // least significant first = the reversed expansion
    double v = 0, f = 0.5;
    for (char d : digits) v += (d == '1') * f, f /= 2;
    return v;
  };
  const auto x = pinn::deepxde_interval_points(5000, torch::kDouble);
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{5000, 1}));
  for (int64_t i = 1; i <= 5000; ++i) ASSERT_EQ(x[i - 1][0].item<double>(), 2 * reversed_binary(i) - 1) << i;
  EXPECT_EQ(x.min().item<double>(), -0.999755859375);  // neither end is ever drawn
  EXPECT_EQ(x.max().item<double>(), 0.99951171875);
  EXPECT_TRUE(torch::equal(pinn::deepxde_interval_points(5000, torch::kFloat).to(torch::kDouble), x));

  const auto ends = pinn::deepxde_interval_ends(8, 1, torch::kDouble).flatten();
  EXPECT_TRUE(torch::equal(ends, torch::tensor({1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0}, torch::kDouble)))
      << ends;
  EXPECT_EQ(pinn::deepxde_interval_ends(500, 1, torch::kDouble).gt(0).sum().item<int64_t>(), 244);

  const auto problem = pinn::make_problem("helmholtz1d");
  const auto deepxde = pinn::training_points(problem, "deepxde", 50, 10, 2, torch::kDouble);
  EXPECT_TRUE(torch::equal(deepxde.boundary, pinn::deepxde_interval_ends(10, 2, torch::kDouble)));
  // The residual is taken at the boundary points too, and the training set holds them twice.
  EXPECT_TRUE(torch::equal(deepxde.residual, torch::cat({deepxde.boundary, pinn::deepxde_interval_points(50, torch::kDouble)})));
  EXPECT_EQ(deepxde.all().size(0), 70);
  // Exactly two boundary points are the two ends, as DeepXDE returns them.
  EXPECT_TRUE(torch::equal(pinn::training_points(problem, "deepxde", 5, 2, 7, torch::kDouble).boundary,
                           problem.boundary(2, torch::kDouble)));
  const auto ours = pinn::training_points(problem, "ours", 50, 2, 0, torch::kDouble);
  EXPECT_TRUE(torch::equal(ours.residual, problem.interior(50, torch::kDouble)));
  EXPECT_NE(error_of([&] { pinn::training_points(pinn::make_problem("helmholtz2d"), "deepxde", 5, 8, 0, torch::kDouble); })
                .find("helmholtz1d only"), std::string::npos);
  EXPECT_NE(error_of([&] { pinn::training_points(problem, "sobol", 5, 2, 0, torch::kDouble); }).find("ours|deepxde, got 'sobol'"),
            std::string::npos);
}

struct NetCase {
  std::string norm, act;
  int64_t dim;
};

class PinnDerivatives : public ::testing::TestWithParam<NetCase> {};

TEST_P(PinnDerivatives, TaylorModeMatchesFiniteDifferences) {
  const auto& [norm, act, dim] = GetParam();
  torch::manual_seed(7);
  pinn::NetSpec spec;
  spec.in_dim = dim;
  spec.width = 8;
  spec.depth = 2;
  spec.norm = norm;
  spec.act = act;
  pinn::PinnNet net(spec, torch::kDouble);
  const auto x = torch::rand({6, dim}, torch::kDouble) * 1.6 - 0.8;
  const auto d = net->forward_jet(x);
  const auto u = net->forward(x).squeeze(1);
  EXPECT_TRUE(torch::allclose(d.value, u, 1e-12, 1e-12));
  const double h = 1e-4;
  for (int64_t k = 0; k < dim; ++k) {
    auto e = torch::zeros({1, dim}, torch::kDouble);
    e[0][k] = h;
    const auto plus = net->forward(x + e).squeeze(1), minus = net->forward(x - e).squeeze(1);
    EXPECT_TRUE(torch::allclose(d.first[k], (plus - minus) / (2 * h), 1e-6, 1e-6)) << "du/dx" << k;
    EXPECT_TRUE(torch::allclose(d.second[k], (plus - 2 * u + minus) / (h * h), 1e-4, 1e-4))
        << "d2u/dx" << k << "2: " << d.second[k] << " vs " << (plus - 2 * u + minus) / (h * h);
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, PinnDerivatives,
                         ::testing::Values(NetCase{"pln", "none", 1}, NetCase{"pls", "none", 1},
                                           NetCase{"ln", "none", 1}, NetCase{"none", "tanh", 1},
                                           NetCase{"none", "sigmoid", 1}, NetCase{"none", "sat", 1},
                                           NetCase{"none", "silu", 1}, NetCase{"pln", "tanh", 2}, NetCase{"pln", "none", 2}),
                         [](const ::testing::TestParamInfo<NetCase>& info) {
                           return info.param.norm + "_" + info.param.act + "_" + std::to_string(info.param.dim) + "d";
                         });

TEST(PinnNetwork, TaylorModeParameterGradientsMatchDifferentiatingTwice) {
  // The training step's backward goes through the jet (its Linear layers and
  // fused norms); here against u, u' and u'' taken from the plain forward by
  // autograd with create_graph, as the original PyTorch module does.
  for (const std::string norm : {"pln", "none"}) {
    SCOPED_TRACE("norm " + norm);
    torch::manual_seed(13);
    pinn::NetSpec spec;
    spec.width = 64;  // eight groups of 4 and more: the kernels' widest lanes
    spec.depth = 3;
    spec.norm = norm;
    spec.act = norm == "none" ? "tanh" : "none";
    pinn::PinnNet net(spec, torch::kDouble);
    const auto x = torch::rand({9, 1}, torch::kDouble) * 1.6 - 0.8;
    const auto weights = torch::randn({3, 9}, torch::kDouble);
    const auto loss_of = [&](const torch::Tensor& u, const torch::Tensor& du, const torch::Tensor& d2u) {
      return (weights[0] * u).sum() + (weights[1] * du).sum() + (weights[2] * d2u).square().sum();
    };
    const auto parameters = net->parameters();
    const auto d = net->forward_jet(x);
    const auto jet_grads = torch::autograd::grad({loss_of(d.value, d.first[0], d.second[0])}, parameters);
    const auto xr = x.clone().requires_grad_();
    const auto u = net->forward(xr).squeeze(1);
    const auto du = torch::autograd::grad({u.sum()}, {xr}, {}, true, true)[0].squeeze(1);
    const auto d2u = torch::autograd::grad({du.sum()}, {xr}, {}, true, true)[0].squeeze(1);
    const auto reference = torch::autograd::grad({loss_of(u, du, d2u)}, parameters);
    for (size_t i = 0; i < parameters.size(); ++i) {
      EXPECT_TRUE(torch::allclose(jet_grads[i], reference[i], 1e-9, 1e-9))
          << "parameter " << i << ": max diff " << (jet_grads[i] - reference[i]).abs().max().item<double>();
    }
  }
}

TEST(PinnNetwork, RejectsBadShapes) {
  pinn::NetSpec spec;
  spec.width = 10;
  spec.group = 4;
  EXPECT_NE(error_of([&] { spec.validate(); }).find("width (10) must be a positive multiple of group (4)"), std::string::npos);
  spec.width = 8;
  spec.act = "gelu";
  EXPECT_NE(error_of([&] { spec.validate(); }).find("act must be one of none|tanh|relu|sigmoid|sat|silu, got 'gelu'"), std::string::npos);
}

TEST(Ntk, JacobianMatchesBruteForce) {
  torch::manual_seed(11);
  pinn::NetSpec spec;
  spec.width = 4;
  spec.depth = 2;
  spec.group = 2;
  pinn::PinnNet net(spec, torch::kDouble);
  const auto x = torch::linspace(-0.9, 0.9, 5, torch::kDouble).unsqueeze(1);
  const auto jac = pinn::output_jacobian(*net, [&](const torch::Tensor& p) { return net->forward(p); }, x);
  // Brute force: central differences in every parameter entry.
  std::vector<torch::Tensor> columns;
  const double h = 1e-6;
  torch::NoGradGuard no_grad;
  for (auto& p : net->parameters()) {
    auto flat = p.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double orig = flat[i].item<double>();
      flat[i] = orig + h;
      const auto plus = net->forward(x).squeeze(1);
      flat[i] = orig - h;
      const auto minus = net->forward(x).squeeze(1);
      flat[i] = orig;
      columns.push_back((plus - minus) / (2 * h));
    }
  }
  const auto brute = torch::stack(columns, 1);
  ASSERT_EQ(jac.sizes(), brute.sizes());
  EXPECT_TRUE(torch::allclose(jac, brute, 1e-6, 1e-7));
  const auto a = pinn::kernel_stats(torch::matmul(jac, jac.t()));
  const auto b = pinn::kernel_stats(torch::matmul(brute, brute.t()));
  EXPECT_NEAR(a.trace, b.trace, 1e-6 * b.trace);
  EXPECT_NEAR(a.lambda_max, b.lambda_max, 1e-6 * b.lambda_max);
  EXPECT_EQ(a.eff_rank_90, b.eff_rank_90);
  EXPECT_EQ(a.numerical_rank, b.numerical_rank);
}

TEST(Ntk, StatisticsOfAKnownSpectrum) {
  torch::manual_seed(12);
  const auto q = std::get<0>(at::linalg_qr(torch::randn({4, 4}, torch::kDouble)));
  const auto kernel = torch::matmul(torch::matmul(q, torch::diag(torch::tensor({4.0, 3.0, 2.0, 1.0}, torch::kDouble))), q.t());
  const auto s = pinn::kernel_stats(kernel);
  EXPECT_NEAR(s.trace, 10, 1e-12);
  EXPECT_NEAR(s.lambda_max, 4, 1e-12);
  EXPECT_NEAR(s.lambda_min, 1, 1e-12);
  EXPECT_NEAR(s.cond, 4, 1e-10);
  EXPECT_EQ(s.eff_rank_90, 3);  // 4 + 3 + 2 = 9 >= 0.9 * 10
  EXPECT_EQ(s.numerical_rank, 4);
  EXPECT_NEAR(s.mean_self_kernel, 2.5, 1e-12);
  EXPECT_NEAR(s.stable_rank, 2.5, 1e-12);
}

// ------------------------------------------------------------------- runs

TEST(PinnRun, SmokeRunIsReproducibleBitForBit) {
  const auto& e = find_experiment("pinn");
  const auto dir = fresh_dir("pinn-run");
  std::string first_log;
  for (int repeat = 0; repeat < 2; ++repeat) {
    RunRequest request;
    request.preset = "smoke";
    request.sets = {"steps=15", "ntk_every=5"};
    request.out = dir / std::to_string(repeat);
    request.threads = 2;
    const auto summary = run_experiment(e, request);
    EXPECT_TRUE(std::isfinite(summary["rel_l2"].get<double>()));
    for (const char* file : {"config.json", "summary.json", "train.csv", "eval.csv", "ntk.csv", "solution.csv"}) {
      EXPECT_TRUE(fs::exists(request.out / file)) << file;
    }
    // The record names what the last bits depend on besides the seed.
    const auto record = Config::parse(slurp(request.out / "config.json"));
    EXPECT_EQ(record.at("kernels").get<std::string>(), pln::cpu_kernels());
    EXPECT_EQ(record.at("blas").get<std::string>(), blas_description());
    EXPECT_EQ(record.at("device").get<std::string>(), "cpu");
    EXPECT_EQ(record.at("device_name").get<std::string>(), machine_description());
    EXPECT_FALSE(blas_description().empty());
    const auto ntk = read_csv(request.out / "ntk.csv");
    EXPECT_EQ(ntk.rows.size(), 3u * 4u);  // init, steps 5 and 10, final x three point sets
    const auto log = slurp(request.out / "train.csv");
    if (repeat == 0) first_log = log;
    else EXPECT_EQ(log, first_log);
  }
  EXPECT_TRUE(check_results(dir).empty());
  fs::remove_all(dir);
}

// A run whose loss stops being finite at step k reports the parameters after
// k - 1 steps (docs/pinn.md, Records): eval.csv ends with their row, the
// summary's errors, and holds no row of the parameters whose loss was not
// finite. Evaluated at every step (the step that diverges had an evaluation
// waiting for its loss) and rarely (the last row is the final evaluation's own).
TEST(PinnRun, DivergedRunEndsEvalCsvWithTheParametersItReports) {
  const auto& e = find_experiment("pinn");
  const auto dir = fresh_dir("pinn-diverged");
  for (const char* eval_every : {"eval_every=1", "eval_every=1000"}) {
    SCOPED_TRACE(eval_every);
    RunRequest request;
    // SGD at a rate of 10 blows the network up in some tens of steps (32 on x86-64).
    request.sets = {"steps=60", "ntk_every=0", "optimizer=sgd", "lr=10", "norm=none", "act=tanh", eval_every};
    request.out = dir / eval_every;
    request.threads = 1;
    const auto summary = run_experiment(e, request);
    const int64_t diverged_at = summary.at("diverged_at").get<int64_t>();
    ASSERT_GE(diverged_at, 2) << "the case needs a divergence after a step of its own";
    ASSERT_LT(diverged_at, 60);
    const auto log = read_csv(request.out / "eval.csv");
    ASSERT_FALSE(log.rows.empty());
    double previous_step = -1;
    for (size_t r = 0; r < log.rows.size(); ++r) {
      const double step = number_value(log.get(r, "step"));
      EXPECT_GT(step, previous_step) << "row " << r;
      previous_step = step;
      EXPECT_TRUE(std::isfinite(number_value(log.get(r, "loss")))) << "row " << r;
    }
    const size_t last = log.rows.size() - 1;
    EXPECT_EQ(number_value(log.get(last, "step")), double(diverged_at - 1));
    EXPECT_EQ(number_value(log.get(last, "rel_l2")), summary.at("rel_l2").get<double>());
    EXPECT_EQ(number_value(log.get(last, "rel_l2_train")), summary.at("rel_l2_train").get<double>());
    EXPECT_EQ(log.rows.size(), std::string(eval_every) == "eval_every=1" ? size_t(diverged_at) : size_t(2));
  }
  fs::remove_all(dir);
}

// A checkpoint keeps the evaluation waiting for its loss; errors that are not
// finite (a step can blow the network up before its loss is known) come back
// as they were, from the strings written and from null, NaN as checkpoints
// written before them hold it.
TEST(PinnRun, EvaluationAwaitingLossRoundTripsErrorsThatAreNotFinite) {
  using namespace pinn;
  const double inf = std::numeric_limits<double>::infinity();
  const LoggedEvaluation e{40, {std::numeric_limits<double>::quiet_NaN(), inf, -inf, 7.0}};
  const Config written = Config::parse(awaiting_loss_to_json(e).dump());
  EXPECT_EQ(written, Config::parse(R"([40, "nan", "inf", "-inf"])"));
  const auto read = awaiting_loss_from_json(written);
  EXPECT_EQ(read.step, 40);
  EXPECT_TRUE(std::isnan(read.errors.rel_l2));
  EXPECT_EQ(read.errors.mse, inf);
  EXPECT_EQ(read.errors.rel_l2_train, -inf);
  const auto from_null = awaiting_loss_from_json(Config::parse("[10, null, 0.5, null]"));
  EXPECT_EQ(from_null.step, 10);
  EXPECT_TRUE(std::isnan(from_null.errors.rel_l2));
  EXPECT_EQ(from_null.errors.mse, 0.5);
  EXPECT_TRUE(std::isnan(from_null.errors.rel_l2_train));
  for (const char* bad : {R"([10, "x", 0.5, 0.5])", "[10, 0.5, 0.5]", "[-1, 0.5, 0.5, 0.5]", R"({"step": 10})"}) {
    EXPECT_NE(error_of([&] { awaiting_loss_from_json(Config::parse(bad)); })
                  .find("pinn: a checkpoint's evaluation_awaiting_loss is not [step, rel_l2, mse, rel_l2_train]"),
              std::string::npos)
        << bad;
  }
}

TEST(PinnRun, BadConfigurationIsRejectedBeforeTraining) {
  const auto& e = find_experiment("pinn");
  const auto dir = fresh_dir("pinn-bad");
  RunRequest request;
  request.preset = "smoke";
  request.out = dir;
  request.sets = {"width=10"};
  EXPECT_NE(error_of([&] { run_experiment(e, request); }).find("width (10) must be a positive multiple of group (4)"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  request.sets = {"norm=bn"};
  EXPECT_NE(error_of([&] { run_experiment(e, request); }).find("norm must be one of pln|pls|ln|none, got 'bn'"), std::string::npos);
  request.sets = {};
  request.preset = "huge";
  EXPECT_NE(error_of([&] { run_experiment(e, request); }).find("unknown preset 'huge'; known: smoke, cpu, paper"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pln::exp
