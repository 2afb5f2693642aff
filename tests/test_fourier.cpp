// The Fourier-fitting experiment: target generator, point sets, network,
// errors, a smoke run (PLN-Net far below LN-Net), and plotting old records.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <records/csv.h>
#include <spec/experiment.h>
#include <run/run.h>
#include <fourier/fourier.h>
#include <fourier/target.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;

using test::error_of;
using test::fresh_dir;

TEST(FourierTarget, UnitRmsEveryModePresentAndSeeded) {
  for (int64_t K : {1, 4, 32}) {
    const auto t = fourier::make_target(K, 7);
    ASSERT_EQ(t.modes(), K);
    EXPECT_NEAR(t.rms(), 1.0, 1e-12);
    // Numerically: mean of f^2 over one period, and each mode's coefficients by projection.
    const int64_t n = 20000;
    const auto x = -1 + 2 * torch::arange(n, torch::kDouble) / double(n);
    const auto f = t(x);
    EXPECT_NEAR(f.square().mean().item<double>(), 1.0, 1e-9);
    for (int64_t k = 1; k <= K; ++k) {
      const double a = 2 * (f * torch::cos(M_PI * double(k) * x)).mean().item<double>();
      const double b = 2 * (f * torch::sin(M_PI * double(k) * x)).mean().item<double>();
      EXPECT_NEAR(a, t.a[k - 1], 1e-9);
      EXPECT_NEAR(b, t.b[k - 1], 1e-9);
      EXPECT_GT(std::hypot(a, b), 1e-3) << "mode " << k << " is missing";
    }
  }
  EXPECT_EQ(fourier::make_target(8, 3).a, fourier::make_target(8, 3).a);
  EXPECT_NE(fourier::make_target(8, 3).a, fourier::make_target(8, 4).a);
  EXPECT_NE(error_of([] { fourier::make_target(0, 1); }).find("K must be >= 1, got 0"), std::string::npos);
}

TEST(FourierTarget, TestGridIsTenTimesDenserAndSharesNoPoint) {
  for (int64_t n : {5, 80, 321}) {
    const auto train = fourier::training_points(n, torch::kDouble).reshape(-1);
    const auto test = fourier::test_points(n, torch::kDouble).reshape(-1);
    EXPECT_EQ(test.size(0), 10 * (n - 1));
    EXPECT_DOUBLE_EQ(train[0].item<double>(), -1.0);
    const auto gaps = (test.unsqueeze(1) - train.unsqueeze(0)).abs().min().item<double>();
    EXPECT_GT(gaps, 0.5 * 2.0 / double(10 * (n - 1)) - 1e-12);
  }
}

Config fourier_config(std::vector<std::string> sets) {
  return resolve_config(find_experiment("fourier"), "smoke", sets);
}

TEST(FourierNetwork, ShallowAndDeepStructure) {
  auto shallow = fourier::make_network(fourier_config({"width=8", "layer=pln", "group=4"}));
  EXPECT_EQ(shallow->size(), 3u);
  auto deep = fourier::make_network(fourier_config({"width=8", "depth=3", "layer=tanh"}));
  EXPECT_EQ(deep->size(), 7u);  // 3 x [Linear, layer] + Linear
  int64_t params = 0;
  for (const auto& p : deep->parameters()) params += p.numel();
  EXPECT_EQ(params, (1 * 8 + 8) + 2 * (8 * 8 + 8) + (8 + 1));
}

TEST(FourierNetwork, BadConfigurationsNameTheProblem) {
  EXPECT_NE(error_of([] { fourier::make_network(fourier_config({"width=10", "group=4"})); })
                .find("width (10) must be a positive multiple of group (4)"), std::string::npos);
  EXPECT_NE(error_of([] { fourier::make_network(fourier_config({"layer=swish"})); })
                .find("layer must be one of pln|pls|ln|relu|tanh|sigmoid|gelu|sat|silu, got 'swish'"), std::string::npos);
  EXPECT_NE(error_of([] { fourier::make_network(fourier_config({"K=8", "n_train=10"})); })
                .find("n_train (10) cannot resolve K = 8 modes"), std::string::npos);
}

TEST(FourierRun, SmokePlnNetFarBelowLnNet) {
  const auto& e = find_experiment("fourier");
  const auto dir = fresh_dir("fourier-smoke");
  double error[2];
  const char* layers[2] = {"layer=ln", "layer=pln"};
  for (int i = 0; i < 2; ++i) {
    RunRequest request;
    request.preset = "smoke";
    request.sets = {layers[i], "K=2"};
    request.out = dir / std::to_string(i);
    request.threads = 2;
    error[i] = run_experiment(e, request)["rel_l2"].get<double>();
    EXPECT_TRUE(fs::exists(request.out / "fit.csv"));
  }
  EXPECT_LT(error[1], 0.25 * error[0]) << "PLN-Net " << error[1] << " vs LN-Net " << error[0];
  fs::remove_all(dir);
}

TEST(FourierRun, DivergenceReportsTheLastFiniteParameters) {
  const auto& e = find_experiment("fourier");
  const auto dir = fresh_dir("fourier-diverge");
  RunRequest request;
  request.preset = "smoke";
  request.sets = {"lr=1e30", "warmup=0", "steps=50"};
  request.out = dir;
  request.threads = 1;
  const auto summary = run_experiment(e, request);
  EXPECT_GE(summary["diverged_at"].get<int64_t>(), 1);
  EXPECT_TRUE(std::isfinite(summary["rel_l2"].get<double>()));
  EXPECT_TRUE(std::isfinite(summary["final_loss"].get<double>()));
  fs::remove_all(dir);
}

TEST(FourierPlot, ReadsRecordsOfAnEarlierVersion) {
  // An older records.csv: no "model" column, fewer metrics, no fit files.
  const auto dir = fresh_dir("fourier-old");
  std::ofstream(dir / "records.csv") << "cell,layer,group,width,K,lr,seed,rel_l2\n"
                                        "a,pln,4,64,4,0.003,0,0.2\nb,pln,4,128,4,0.003,0,0.05\n"
                                        "c,ln,4,64,4,0.003,0,0.7\nd,ln,4,128,4,0.003,0,0.7\n";
  fourier::plot_grid(dir, read_csv(dir / "records.csv"), dir);
  EXPECT_TRUE(fs::exists(dir / "error_vs_width.png"));
  EXPECT_TRUE(fs::exists(dir / "error_vs_width.svg"));
  const auto slopes = read_csv(dir / "slopes.csv");
  ASSERT_EQ(slopes.rows.size(), 2u);
  EXPECT_EQ(slopes.rows[0][0], "PLN(4)");
  EXPECT_EQ(slopes.rows[0][1], "2.00");  // 0.2 -> 0.05 over a doubling of width
  EXPECT_EQ(slopes.rows[1][1], "0.00");  // the LN-Net does not improve
  fs::remove_all(dir);
}

TEST(FourierPlot, TablesAndSpreadOfSlopesIntoAnotherDirectory) {
  // Two seeds at each of two learning rates; lr 0.01 has the lower median at both widths.
  const auto dir = fresh_dir("fourier-tables"), out = fresh_dir("fourier-tables-out");
  std::ofstream(dir / "records.csv") << "cell,model,width,K,lr,seed,rel_l2\n"
                                        "a,PLN(4),64,4,0.01,0,0.4\nb,PLN(4),64,4,0.01,1,0.2\n"
                                        "c,PLN(4),128,4,0.01,0,0.1\nd,PLN(4),128,4,0.01,1,0.1\n"
                                        "e,PLN(4),64,4,0.001,0,0.9\nf,PLN(4),64,4,0.001,1,0.9\n"
                                        "g,PLN(4),128,4,0.001,0,0.9\nh,PLN(4),128,4,0.001,1,0.9\n";
  const auto records = read_csv(dir / "records.csv");
  fourier::plot_grid(dir, records, out);
  EXPECT_TRUE(fs::exists(out / "error_vs_width.png"));
  EXPECT_FALSE(fs::exists(dir / "error_vs_width.png"));  // nothing is written beside the records
  std::ifstream table(out / "error_table.md");
  const std::string md((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| K = 4 | w = 64 | w = 128 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| PLN(4) | 0.3 | 0.1 |"), std::string::npos) << md;  // medians at lr 0.01
  const auto slopes = read_csv(out / "slopes.csv");
  ASSERT_EQ(slopes.rows.size(), 1u);
  // Medians 0.3 -> 0.1: r = log2(3); per (seed, lr): 2 (0.4 -> 0.1), 1 (0.2 -> 0.1), 0 (lr 0.001).
  EXPECT_EQ(slopes.get(0, "K_4"), "1.58");
  EXPECT_EQ(slopes.get(0, "K_4_min"), "0.00");
  EXPECT_EQ(slopes.get(0, "K_4_max"), "2.00");
  // The example fits draw the best cell at the largest width and K: c or d (0.1), the first seen.
  EXPECT_EQ(fourier::figure_inputs(records), std::vector<std::string>{"c/fit.csv"});
  fs::remove_all(dir);
  fs::remove_all(out);
}

}  // namespace
}  // namespace pln::exp
