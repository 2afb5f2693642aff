// The experiment framework (configuration, schedules, CSV, grids, schema) and
// the PINN experiment's pieces (problems, Taylor-mode network, NTK).

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <pinn/network.h>
#include <pinn/ntk.h>
#include <pinn/problem.h>
#include <records/csv.h>
#include <records/pack.h>
#include <records/schema.h>
#include <records/statistics.h>
#include <records/step_log.h>
#include <run/device.h>
#include <run/provenance.h>
#include <run/run.h>
#include <run/threads_and_memory.h>
#include <spec/config.h>
#include <spec/experiment.h>
#include <spec/keys.h>
#include <sweep/gpu_slots.h>
#include <sweep/cells.h>
#include <train/divergence_guard.h>
#include <train/schedule.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;

using test::error_of;
using test::fresh_dir;

using test::slurp;

// ------------------------------------------------------------ configuration

// A key table of three keys, as a family declares its own (spec/keys.h).
KeyTable toy_keys() {
  return KeyTable("pinn", {integer("width", 128, at_least(1), "features"), number("lr", 1e-3, above(0), "step size"),
                           text("norm", "pln", "the norm"), boolean("affine", false, "per-feature weight and bias")});
}

TEST(Config, OverridesParseAsTheKeysType) {
  const auto keys = toy_keys();
  Config c = keys.defaults();
  keys.apply(c, {"width=64", "lr=3e-3", "norm=ln", "affine=true"});
  EXPECT_EQ(get_int(c, "width"), 64);
  EXPECT_DOUBLE_EQ(get_double(c, "lr"), 3e-3);
  EXPECT_EQ(get_string(c, "norm"), "ln");
  EXPECT_TRUE(get_bool(c, "affine"));
  keys.apply(c, "lr=1");  // an integer literal for a number key stays a number
  EXPECT_TRUE(c["lr"].is_number_float());
}

TEST(Config, BadOverridesNameTheProblem) {
  const auto keys = toy_keys();
  Config c = keys.defaults();
  const auto error = [&](const std::string& set) { return error_of([&] { keys.apply(c, set); }); };
  EXPECT_NE(error("widht=3").find("pinn: unknown key 'widht'; known keys: width, lr, norm, affine"), std::string::npos);
  EXPECT_NE(error("width=12.5").find("key 'width' expects an integer, got '12.5'"), std::string::npos);
  EXPECT_NE(error("lr=fast").find("key 'lr' expects a finite number, got 'fast'"), std::string::npos);
  EXPECT_NE(error("lr=nan").find("expects a finite number"), std::string::npos);
  EXPECT_NE(error("affine=maybe").find("expects true or false"), std::string::npos);
  EXPECT_NE(error("width").find("--set expects key=value, got 'width'"), std::string::npos);
}

TEST(Config, ValueTextRoundTrips) {
  const auto keys = toy_keys();
  for (double v : {1e-3, 3e-4, 0.1, 1.0 / 3.0, 2.5e-7}) {
    Config c = keys.defaults();
    keys.apply(c, "lr=" + value_text(Config(v)));
    EXPECT_EQ(get_double(c, "lr"), v);
  }
}

// ---------------------------------------------------------------- schedules

TEST(Schedule, WarmupThenCosineToTheFloor) {
  Schedule s;
  s.kind = "cosine";
  s.lr = 1.0;
  s.total = 110;
  s.warmup = 10;
  s.floor = 0.1;
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(59), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 49 / 99.0)), 1e-12);
  EXPECT_NEAR(s.at(109), 0.1, 1e-12);
}

TEST(Schedule, StepDecayAndConstant) {
  Schedule s;
  s.kind = "step";
  s.lr = 0.1;
  s.total = 100;
  s.step_size = 30;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.at(29), 0.1);
  EXPECT_DOUBLE_EQ(s.at(30), 0.05);
  EXPECT_DOUBLE_EQ(s.at(95), 0.0125);
  s.kind = "constant";
  EXPECT_DOUBLE_EQ(s.at(95), 0.1);
}

TEST(Schedule, InvalidValuesAreRejected) {
  Schedule s;
  s.kind = "linear";
  EXPECT_NE(error_of([&] { s.validate(); }).find("one of constant|step|cosine, got 'linear'"), std::string::npos);
  s.kind = "cosine";
  s.floor = 2;
  EXPECT_NE(error_of([&] { s.validate(); }).find("lr_floor must be in [0, 1], got 2"), std::string::npos);
  s.floor = 0;
  s.lr = -1;
  EXPECT_NE(error_of([&] { s.validate(); }).find("lr must be a positive finite number"), std::string::npos);
}

// ---------------------------------------------------------------------- CSV

TEST(Csv, RoundTripsQuotedFields) {
  CsvTable t;
  t.header = {"cell", "note"};
  t.rows = {{"a", "has, comma"}, {"b", "has \"quotes\"\nand a newline"}, {"c", ""}};
  const auto back = parse_csv(to_csv(t), "test");
  EXPECT_EQ(back.header, t.header);
  EXPECT_EQ(back.rows, t.rows);
}

TEST(Csv, OlderFilesWithFewerColumnsStillRead) {
  const auto t = parse_csv("cell,rel_l2\nx,0.5\n", "old.csv");
  EXPECT_EQ(t.get(0, "rel_l2"), "0.5");
  EXPECT_EQ(t.get(0, "added_later"), "");
}

TEST(Csv, CorruptFilesNameTheProblem) {
  EXPECT_NE(error_of([] { parse_csv("a,b\n1,2,3\n", "bad.csv"); }).find("bad.csv: row 1 has 3 fields, the header has 2"), std::string::npos);
  EXPECT_NE(error_of([] { parse_csv("a,b\n\"1,2\n", "bad.csv"); }).find("bad.csv: unterminated quoted field"), std::string::npos);
  EXPECT_NE(error_of([] { read_csv("/nonexistent/records.csv"); }).find("cannot open /nonexistent/records.csv"), std::string::npos);
}

TEST(Csv, StepLogFlushesWholeFiles) {
  const auto dir = fresh_dir("steplog");
  {
    StepLog log(dir / "train.csv", {"step", "loss"}, 2);
    log.add({1, 0.5});
    EXPECT_EQ(read_csv(dir / "train.csv").rows.size(), 0u);  // not flushed yet
    log.add({2, NAN});
    const auto t = read_csv(dir / "train.csv");
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(t.rows[1][1], "");  // NaN is a missing value
  }
  fs::remove_all(dir);
}

// --------------------------------------------------------------------- grids

TEST(Grid, ExpandsTheProductInAStableOrder) {
  GridSpec spec{"", "smoke", Config{{"steps", 5}},
                {{"model", {{"LN", Config{{"norm", "ln"}}}, {"PLN(4)", Config{{"norm", "pln"}, {"group", 4}}}}},
                 {"seed", {{"0", Config{{"seed", 0}}}, {"1", Config{{"seed", 1}}}, {"2", Config{{"seed", 2}}}}}}};
  const auto cells = expand_grid(spec);
  ASSERT_EQ(cells.size(), 6u);
  std::set<std::string> ids;
  for (const auto& c : cells) ids.insert(c.id);
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(cells[0].id, "0_model=LN_seed=0");
  EXPECT_EQ(cells[4].id, "4_model=PLN4_seed=1");
  EXPECT_EQ(cells[4].sets, (std::vector<std::string>{"steps=5", "norm=pln", "group=4", "seed=1"}));
  EXPECT_EQ(cells[4].labels.at("model"), "PLN(4)");
  EXPECT_EQ(expand_grid(spec)[5].id, cells[5].id);
}

TEST(Schema, FlagsMissingMetricsAndRowCounts) {
  const auto dir = fresh_dir("schema");
  std::ofstream(dir / "grid.json") << R"({"experiment":"pinn","n_cells":2,"axes":["model"],"cells":[{"id":"0_model=LN"},{"id":"1_model=PLN4"}]})";
  std::ofstream(dir / "records.csv") << "cell,model,rel_l2,mse,final_loss,iters,seconds,iters_per_s\n0_model=LN,LN,,1,1,1,1,1\n";
  const auto problems = check_results(dir);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("1 rows, the grid has 2 cells"), std::string::npos) << all;
  EXPECT_NE(all.find("cell '0_model=LN': rel_l2 is '', not a finite number"), std::string::npos) << all;
  std::ofstream(dir / "grid.json") << R"({"experiment":"pinn","axes":["model"]})";
  const auto malformed = check_results(dir);
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_NE(malformed[0].find("grid.json: malformed"), std::string::npos) << malformed[0];
  fs::remove_all(dir);
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

// ------------------------------------------------------------- runs on disk

// ------------------------------------------------------------------ devices

// The error asking for GPU `text` gives on this machine: no CUDA in this
// LibTorch, no GPU visible, or (with GPUs) an index past them.
std::string expected_cuda_error(const std::string& text) {
  if (!torch_has_cuda()) return fmt::format("device '{}': this LibTorch ({}) was built without CUDA", text, TORCH_VERSION);
  if (torch::cuda::device_count() == 0) return fmt::format("device '{}': no CUDA GPU is visible", text);
  return fmt::format("device '{}': only {} CUDA GPU(s) visible", text, torch::cuda::device_count());
}

TEST(Device, ParsesAndNamesWhatIsWrong) {
  EXPECT_EQ(parse_device("cpu"), torch::Device(torch::kCPU));
  for (const char* bad : {"gpu", "CUDA", "cuda:", "cuda:-1", "cuda:01", "cuda:0:1", "cpu:0", ""}) {
    EXPECT_EQ(error_of([&] { parse_device(bad); }), fmt::format("device '{}': expected cpu, cuda or cuda:N", bad))
        << bad;
  }
  const std::string beyond = "cuda:" + std::to_string(torch::cuda::device_count());
  EXPECT_NE(error_of([&] { parse_device(beyond); }).find(expected_cuda_error(beyond)), std::string::npos);
  if (torch::cuda::device_count() == 0) {
    EXPECT_NE(error_of([&] { parse_device("cuda"); }).find(expected_cuda_error("cuda")), std::string::npos);
  } else {
    EXPECT_EQ(parse_device("cuda"), torch::Device(torch::kCUDA, 0));
    EXPECT_NE(device_record(parse_device("cuda")).at("device_name").get<std::string>(), machine_description());
  }
}

TEST(Device, GridCellsGoToTheLeastBusyVisibleGpu) {
  GpuSlots gpus(3, "4,6,7");
  EXPECT_EQ(gpus.count(), 3u);
  EXPECT_EQ(gpus.take(), 0);
  EXPECT_EQ(gpus.take(), 1);
  EXPECT_EQ(gpus.take(), 2);
  EXPECT_EQ(gpus.take(), 0);  // a second cell on each, the first again on a tie
  gpus.give_back(1);
  EXPECT_EQ(gpus.take(), 1);  // the one freed
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(gpus.environment(2), (Env{{"CUDA_VISIBLE_DEVICES", "7"}}));
  EXPECT_EQ(gpus.environment(-1), Env{});
  EXPECT_EQ(GpuSlots(2, nullptr).environment(1), (Env{{"CUDA_VISIBLE_DEVICES", "1"}}));
  GpuSlots none(0, nullptr);
  EXPECT_EQ(none.take(), -1);
  EXPECT_EQ(none.environment(none.take()), Env{});
}

TEST(Device, AmpIsBf16OnCudaOnly) {
  const auto resolve = [](const char* family, const std::vector<std::string>& sets) {
    return resolve_config(find_experiment(family), "smoke", sets);
  };
  EXPECT_EQ(error_of([&] { resolve("cnn", {"amp=bf16"}); }), "cnn: amp=bf16 is autocast on CUDA; device is cpu");
  EXPECT_NE(error_of([&] { resolve("vit", {"amp=fp8"}); }).find("vit: amp must be one of none|bf16, got 'fp8'"),
            std::string::npos);
  EXPECT_EQ(resolve("vit", {"amp=none"}).at("amp"), "none");
  // Whether the GPU is there is the run's to check, when it starts.
  EXPECT_EQ(resolve("vgg", {"amp=bf16", "device=cuda:3"}).at("amp"), "bf16");
}

// Every family takes a device key; a device this machine lacks fails before
// the run starts, naming it, and nothing is recorded.
TEST(Device, EveryExperimentTakesTheKeyAndRefusesAMissingGpu) {
  const std::string missing = "cuda:" + std::to_string(torch::cuda::device_count());
  for (const auto& e : experiments()) {
    EXPECT_EQ(e.preset("smoke").at("device").get<std::string>(), "cpu") << e.name;
    const auto dir = fresh_dir("device-" + e.name);
    RunRequest request;
    request.preset = "smoke";
    request.out = dir;
    request.sets = {"device=" + missing};
    EXPECT_NE(error_of([&] { run_experiment(e, request); }).find(expected_cuda_error(missing)), std::string::npos)
        << e.name;
    EXPECT_FALSE(fs::exists(dir / "config.json")) << e.name;
    fs::remove_all(dir);
  }
  for (const char* name : {"cnn", "vgg", "vit"}) {
    EXPECT_EQ(find_experiment(name).preset("smoke").at("amp").get<std::string>(), "none") << name;
  }
}

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

TEST(Threads, OpenMPWaitPolicyIsReadFromTheEnvironment) {
  // Saved and put back: the test binary's own OpenMP read them at start-up.
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* value = std::getenv(name);
    saved[name] = value ? std::optional<std::string>(value) : std::nullopt;
    ::unsetenv(name);
  }
  EXPECT_EQ(openmp_wait_policy(), "default");
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  EXPECT_EQ(openmp_wait_policy(), "GOMP_SPINCOUNT=1000");
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);  // the policy a user names wins
  EXPECT_EQ(openmp_wait_policy(), "OMP_WAIT_POLICY=PASSIVE");
  for (const auto& [name, value] : saved) {
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
    else ::unsetenv(name.c_str());
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

namespace pln::exp {
namespace {

TEST(DivergenceGuard, PutsBackTheLastParametersWithAFiniteLoss) {
  torch::nn::Linear net(3, 2);
  DivergenceGuard guard("test");
  EXPECT_TRUE(guard.check(0.5, 0, *net));
  guard.keep(*net);
  const auto kept = net->weight.detach().clone();
  {
    torch::NoGradGuard no_grad;
    net->weight.add_(5.0);
  }
  EXPECT_FALSE(guard.diverged());
  EXPECT_FALSE(guard.check(std::nan(""), 7, *net));
  EXPECT_TRUE(guard.diverged());
  EXPECT_EQ(guard.diverged_at(), 7);
  EXPECT_TRUE(torch::equal(net->weight, kept));
  // Nothing kept yet (the first step of a session): the parameters stay as they are.
  DivergenceGuard fresh("test");
  const auto now = net->weight.detach().clone();
  EXPECT_FALSE(fresh.check(INFINITY, 0, *net));
  EXPECT_TRUE(torch::equal(net->weight, now));
}

}  // namespace
}  // namespace pln::exp

namespace pln::exp {
namespace {

TEST(Csv, NumberValueAndMedianOfRecordCells) {
  EXPECT_EQ(number_value("0.5"), 0.5);
  EXPECT_EQ(number_value("-3e-4"), -3e-4);
  EXPECT_TRUE(std::isnan(number_value("")));      // a missing value
  EXPECT_TRUE(std::isnan(number_value("C")));     // an axis label, not a number
  EXPECT_TRUE(std::isnan(number_value("1.5x")));  // not wholly a number
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 2.0, 3.0}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

}  // namespace
}  // namespace pln::exp
