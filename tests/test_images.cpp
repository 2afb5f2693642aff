// The image experiments: network structure, errors, a smoke run per runner,
// and the planners' cell counts.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <spec/experiment.h>
#include <sweep/cells.h>
#include <records/csv.h>
#include <run/run.h>
#include <images/models.h>

#include <cmath>
#include <fmt/format.h>

#include <fstream>
#include <set>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;

TEST(ImageModels, CnnAndVggShapes) {
  images::BlockSpec spec{"pln", 4, "none", "channel"};
  auto cnn = images::make_cnn(1, 28, 8, 2, 10, spec);
  EXPECT_EQ(cnn->forward(torch::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 10}));
  auto vgg = images::make_vgg16(3, 8, 10, images::BlockSpec{"pln", 8, "none", "channel"});
  EXPECT_EQ(vgg->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  int convs = 0;
  for (const auto& m : vgg->modules(false)) convs += m->as<torch::nn::Conv2d>() != nullptr;
  EXPECT_EQ(convs, 13);
}

TEST(ImageModels, MixedAxisGroupsAlongTheWidth) {
  images::BlockSpec spec{"pln", 4, "none", "mixed"};
  torch::nn::Sequential net;
  images::add_conv_block(net, 1, 4, spec, 1, 8);  // an odd block: width-axis groups
  const auto y = net->forward(100 * torch::randn({2, 1, 8, 8}));  // large variance: eps is negligible
  // Every group of 4 consecutive pixels along a row has mean 0 and mean square 1.
  const auto groups = y.reshape({-1, 4});
  EXPECT_LT(groups.mean(1).abs().max().item<double>(), 1e-5);
  EXPECT_LT((groups.square().mean(1) - 1).abs().max().item<double>(), 1e-3);
}

TEST(ImageModels, BadSpecsNameTheProblem) {
  EXPECT_NE(error_of([] { images::make_cnn(1, 28, 10, 1, 10, {"pln", 4, "none", "channel"}); })
                .find("width (10) must be a positive multiple of group (4)"), std::string::npos);
  EXPECT_NE(error_of([] { images::make_cnn(1, 28, 8, 1, 10, {"gn", 4, "none", "channel"}); })
                .find("norm must be one of pln|pls|ln|bn|none, got 'gn'"), std::string::npos);
  EXPECT_NE(error_of([] { images::make_cnn(1, 28, 8, 1, 10, {"pln", 4, "gelu", "channel"}); })
                .find("act must be one of none|relu|tanh|sat|silu, got 'gelu'"), std::string::npos);
}

TEST(ImageRuns, SmokeRunPerRunner) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
  }
  const auto dir = fresh_dir("images-smoke");
  for (const char* name : {"cnn", "vgg"}) {
    RunRequest request;
    request.preset = "smoke";
    request.sets = {"labels=random", "labels_file=" + (dir / "labels.bin").string()};
    request.out = dir / name;
    request.threads = 2;
    const auto summary = run_experiment(find_experiment(name), request);
    for (const char* key : {"train_acc", "test_acc", "final_loss", "seconds"}) {
      EXPECT_TRUE(std::isfinite(summary[key].get<double>())) << name << " " << key;
    }
    EXPECT_TRUE(fs::exists(request.out / "epochs.csv"));
  }
  EXPECT_EQ(fs::file_size(dir / "labels.bin"), 60000u);
  fs::remove_all(dir);
}

TEST(ImageRuns, MissingDataIsAClearError) {
  const auto dir = fresh_dir("images-missing");
  RunRequest request;
  request.preset = "smoke";
  request.sets = {"data=cifar10", "data_dir=" + dir.string()};
  request.out = dir / "run";
  EXPECT_NE(error_of([&] { run_experiment(find_experiment("cnn"), request); }).find("data_batch_1.bin: no such file"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(ImageModels, SatAndSiluActivations) {
  const auto x = torch::linspace(-4, 4, 17).reshape({1, 1, 1, 17});
  for (const std::string act : {"sat", "silu"}) {
    torch::nn::Sequential net;
    images::add_conv_block(net, 1, 1, images::BlockSpec{"none", 1, act, "channel"}, 0, 17);
    auto* conv = net[0]->as<torch::nn::Conv2d>();
    torch::NoGradGuard no_grad;
    conv->weight.zero_();
    conv->weight.index_put_({0, 0, 1, 1}, 1.0);  // the identity convolution
    conv->bias.zero_();
    const auto y = net->forward(x);
    const auto expected = act == "sat" ? torch::sin(torch::atan(x)) : x * torch::sigmoid(x);
    EXPECT_TRUE(torch::allclose(y, expected, 1e-6, 1e-6)) << act << ": " << y;
  }
}

// Records of a VGG grid, `seeds` runs a cell; accuracy = base + 0.1 * seed.
CsvTable vgg_records(const std::vector<std::string>& variants, int seeds, double base) {
  CsvTable records;
  records.header = {"cell", "variant", "lr", "init_scale", "seed", "labels", "train_acc", "test_acc"};
  int cell = 0;
  for (const auto& variant : variants) {
    for (const char* lr : {"0.01", "0.1"}) {
      for (const char* scale : {"0.5", "1", "2"}) {
        for (int seed = 0; seed < seeds; ++seed) {
          records.rows.push_back({std::to_string(cell++), variant, lr, scale, std::to_string(seed), "clean", "0.9",
                                  fmt::format("{}", base + 0.1 * seed)});
        }
      }
    }
  }
  return records;
}

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ImagePlots, VggHeatMapIsTheSeedMeanOfTestAccuracy) {
  const auto dir = fresh_dir("vgg-heat");
  find_experiment("vgg").plot_grid(dir, vgg_records({"PLN(8)", "ReLU", "Tanh", "SAT", "SiLU"}, 3, 0.45), dir);
  EXPECT_TRUE(fs::exists(dir / "heatmap.png"));
  EXPECT_TRUE(fs::exists(dir / "heatmap.svg"));
  EXPECT_TRUE(fs::exists(dir / "accuracy.md"));
  const auto md = read_text_file(dir / "heatmap.md");
  // Test accuracies 0.45, 0.55, 0.65 over three seeds: the mean, 0.55, in every cell.
  EXPECT_NE(md.find("(90 runs; 3 seeds a cell)"), std::string::npos) << md;
  EXPECT_NE(md.find("**SiLU**\n\n| init scale \\ lr | 0.01 | 0.1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 0.550 | 0.550 |\n| 1 | 0.550 | 0.550 |\n| 1/2 | 0.550 | 0.550 |"), std::string::npos) << md;
  const auto sensitivity = read_text_file(dir / "sensitivity.md");
  EXPECT_NE(sensitivity.find("| SAT | final | 0.550 | 6 | 2 | 0.000 | 0.000 |"), std::string::npos) << sensitivity;
  // These records have no best epoch: the table says so and reports the final accuracy only.
  EXPECT_NE(sensitivity.find("these do not"), std::string::npos) << sensitivity;
  EXPECT_EQ(sensitivity.find("best epoch |"), std::string::npos) << sensitivity;
  fs::remove_all(dir);
}

// With the best epoch's accuracy recorded, sensitivity.md reports it beside the
// final one, from its own column; the heat map stays the final accuracy.
TEST(ImagePlots, VggSensitivityReportsTheFinalAndTheBestEpoch) {
  const auto dir = fresh_dir("vgg-heat-best");
  auto records = vgg_records({"PLN(8)", "SAT"}, 2, 0.45);
  records.header.push_back("best_test_acc");
  for (auto& row : records.rows) row.push_back(row[3] == "0.5" ? "0.3" : "0.8");  // init scale 1/2 never trains
  find_experiment("vgg").plot_grid(dir, records, dir);
  const auto sensitivity = read_text_file(dir / "sensitivity.md");
  EXPECT_NE(sensitivity.find("| SAT | final | 0.500 | 6 | 2 | 0.000 | 0.000 |"), std::string::npos) << sensitivity;
  EXPECT_NE(sensitivity.find("| SAT | best epoch | 0.800 | 4 | 2 | 0.500 | 0.500 |"), std::string::npos) << sensitivity;
  EXPECT_EQ(sensitivity.find("these do not"), std::string::npos) << sensitivity;
  EXPECT_NE(read_text_file(dir / "heatmap.md").find("| 1/2 | 0.500 | 0.500 |"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ImagePlots, VggRecordsOfTheOldVariantsStillPlot) {
  // The normalisation comparison's labels (the `cpu` grid's before Figure 4's panels).
  const auto dir = fresh_dir("vgg-heat-old");
  find_experiment("vgg").plot_grid(dir, vgg_records({"PLN[8]", "PLS[8]", "BN+ReLU"}, 1, 0.3), dir);
  EXPECT_NE(read_text_file(dir / "heatmap.md").find("**BN+ReLU**"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ImagePlots, VggRecordsWithoutTheAxesSayWhy) {
  const auto dir = fresh_dir("vgg-heat-bad");
  CsvTable records;
  records.header = {"cell", "variant", "labels", "train_acc", "test_acc"};
  records.rows.push_back({"0", "PLN(8)", "clean", "0.5", "0.5"});
  EXPECT_NE(error_of([&] { find_experiment("vgg").plot_grid(dir, records, dir); }).find("records.csv has no 'lr' column"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(ImagePlanners, CellCounts) {
  const auto vgg_paper = expand_grid(find_grid(find_experiment("vgg"), "paper"));
  EXPECT_EQ(vgg_paper.size(), 945u);
  std::set<std::string> panels;
  for (const auto& cell : vgg_paper) panels.insert(cell.labels.at("variant"));
  EXPECT_EQ(panels, (std::set<std::string>{"PLN(8)", "ReLU", "Tanh", "SAT", "SiLU"}));
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "cpu")).size(), 315u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "norms")).size(), 945u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "norms-cpu")).size(), 30u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "bias")).size(), 108u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("fourier"), "paper")).size(), 1440u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("pinn"), "table-ours")).size(), 2160u);
}

}  // namespace
}  // namespace pln::exp
