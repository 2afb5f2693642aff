// The image experiments: network structure, errors, a smoke run per runner,
// and the planners' cell counts.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <common/experiment.h>
#include <common/grid.h>
#include <common/csv.h>
#include <common/run.h>
#include <images/models.h>

#include <cmath>
#include <fstream>

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
                .find("act must be one of none|relu|tanh, got 'gelu'"), std::string::npos);
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

TEST(ImagePlots, VggHeatMapFromRecords) {
  const auto dir = fresh_dir("vgg-heat");
  CsvTable records;
  records.header = {"cell", "variant", "lr", "init_scale", "labels", "train_acc", "test_acc"};
  int cell = 0;
  for (const char* variant : {"PLN[8]", "ReLU"}) {
    for (const char* lr : {"0.01", "0.1"}) {
      for (const char* scale : {"0.5", "1", "2"}) {
        records.rows.push_back({std::to_string(cell++), variant, lr, scale, "clean", "0.5", "0.4"});
      }
    }
  }
  find_experiment("vgg").plot_grid(dir, records, dir);
  EXPECT_TRUE(fs::exists(dir / "heatmap.png"));
  EXPECT_TRUE(fs::exists(dir / "heatmap.svg"));
  EXPECT_TRUE(fs::exists(dir / "accuracy.md"));
  std::ifstream in(dir / "heatmap.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| variant | lr 0.01, init x0.5 | lr 0.01, init x1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| PLN[8] | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 |"), std::string::npos) << md;
  fs::remove_all(dir);
}

TEST(ImagePlanners, CellCounts) {
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "paper")).size(), 945u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("vgg"), "bias")).size(), 108u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("fourier"), "paper")).size(), 1440u);
  EXPECT_EQ(expand_grid(find_grid(find_experiment("pinn"), "table")).size(), 120u);
}

}  // namespace
}  // namespace pln::exp
