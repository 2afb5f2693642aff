// The Vision Transformer of `pln vit`: attention against a naive
// implementation, norm-site selection, option errors, checkpoint/resume
// equivalence and a smoke run.

#include "system/atomic_file.h"
#include "records/csv.h"
#include "sweep/cells.h"
#include "run/run.h"
#include "experiment_helpers.h"
#include "vit/model.h"
#include "vit/train.h"
#include "vit/vit.h"

#include <pln/pln.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using namespace pln::exp;
using pln::test::error_of;
using pln::test::fresh_dir;

bool have_fashion_mnist() {
  return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

// Attention written out head by head, token by token, in double.
torch::Tensor naive_attention(const torch::Tensor& x, const torch::Tensor& w_qkv, const torch::Tensor& b_qkv,
                              const torch::Tensor& w_proj, const torch::Tensor& b_proj, int64_t heads) {
  const int64_t n = x.size(0), t = x.size(1), c = x.size(2), d = c / heads;
  auto out = torch::zeros({n, t, c}, x.options());
  for (int64_t s = 0; s < n; ++s) {
    auto concat = torch::zeros({t, c}, x.options());
    for (int64_t h = 0; h < heads; ++h) {
      const auto rows = [&](int64_t part) { return w_qkv.narrow(0, part * c + h * d, d); };
      const auto bias = [&](int64_t part) { return b_qkv.narrow(0, part * c + h * d, d); };
      const auto q = x[s].matmul(rows(0).t()) + bias(0);
      const auto k = x[s].matmul(rows(1).t()) + bias(1);
      const auto v = x[s].matmul(rows(2).t()) + bias(2);
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> score(static_cast<size_t>(t));
        double top = -INFINITY, total = 0;
        for (int64_t j = 0; j < t; ++j) {
          score[j] = (q[i] * k[j]).sum().item<double>() / std::sqrt(double(d));
          top = std::max(top, score[j]);
        }
        for (auto& e : score) total += (e = std::exp(e - top));
        for (int64_t j = 0; j < t; ++j) concat[i].narrow(0, h * d, d) += v[j] * (score[j] / total);
      }
    }
    out[s] = concat.matmul(w_proj.t()) + b_proj;
  }
  return out;
}

TEST(VitModel, AttentionMatchesNaive) {
  torch::manual_seed(3);
  vit::SelfAttention attention(12, 3);
  attention->to(torch::kFloat64);
  const auto x = torch::randn({2, 5, 12}, torch::kFloat64);
  const auto y = attention->forward(x);
  ASSERT_EQ(y.sizes(), x.sizes());
  const auto expected = naive_attention(x, attention->qkv->weight, attention->qkv->bias, attention->proj->weight,
                                        attention->proj->bias, 3);
  EXPECT_TRUE(torch::allclose(y, expected, 1e-12, 1e-12)) << (y - expected).abs().max().item<double>();
  // One head differs from three: the head split matters.
  vit::SelfAttention one(12, 1);
  one->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < one->parameters().size(); ++i) one->parameters()[i].copy_(attention->parameters()[i]);
  EXPECT_FALSE(torch::allclose(one->forward(x), y, 1e-6, 1e-6));
}

TEST(VitModel, ShapesAndParameterCount) {
  vit::ViTOptions o;
  o.width = 32, o.blocks = 2, o.heads = 4, o.patch = 7;
  o.norms = vit::parse_norm_sites("pln", 8, "");
  vit::VisionTransformer net(o);
  const auto logits = net->forward(torch::randn({3, 1, 28, 28}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10}));
  int64_t params = 0;
  for (const auto& p : net->parameters()) params += p.numel();
  // patch conv + cls + positions + 2 x (2 norms + qkv + proj + fc1 + fc2) + final norm + head
  const int64_t c = 32, block = 2 * 2 * c + (3 * c * c + 3 * c) + (c * c + c) + (4 * c * c + 4 * c) + (4 * c * c + c);
  EXPECT_EQ(params, (49 * c + c) + c + 17 * c + 2 * block + 2 * c + (10 * c + 10));
  const auto text = c10::str(*net);
  EXPECT_NE(text.find("tokens=17"), std::string::npos) << text;
  EXPECT_NE(text.find("norms attn/mlp/final=PLN(8)/PLN(8)/PLN(8)"), std::string::npos) << text;
}

TEST(VitModel, NormSiteSelection) {
  const auto sites = vit::parse_norm_sites("pln", 4, "mlp:none,final:ln");
  EXPECT_EQ(sites.attn.kind, "pln");
  EXPECT_EQ(sites.attn.group, 4);
  EXPECT_EQ(sites.mlp.kind, "none");
  EXPECT_EQ(sites.final.kind, "ln");
  vit::ViTOptions o;
  o.width = 16, o.blocks = 2, o.heads = 2;
  o.norms = vit::parse_norm_sites("pls", 4, "mlp:none,final:ln");
  vit::VisionTransformer net(o);
  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules;
  for (const auto& item : net->named_modules()) modules[item.key()] = item.value();
  for (const char* block : {"blocks.0", "blocks.1"}) {
    const auto* norm = modules.at(std::string(block) + ".norm_attn")->as<pln::ParallelLN>();
    ASSERT_NE(norm, nullptr) << block;
    EXPECT_EQ(norm->options.num_per_group(), 4);
    EXPECT_EQ(norm->options.dim(), 3);
    EXPECT_FALSE(norm->options.centering());  // PLS
    EXPECT_NE(modules.at(std::string(block) + ".norm_mlp")->as<torch::nn::Identity>(), nullptr) << block;
  }
  EXPECT_NE(modules.at("norm")->as<torch::nn::LayerNorm>(), nullptr);
  // The PLN sites act in the forward pass: PLS(4) normalises every group of
  // the attention's input, so scaling the tokens leaves the attention unchanged.
  net->eval();
  const auto x = torch::randn({2, 17, 16});
  auto& block0 = *net->blocks[0]->as<vit::Block>();
  const auto branch = [&](const torch::Tensor& in) {
    return block0.attention->forward(block0.norm_attn.forward(in));
  };
  EXPECT_TRUE(torch::allclose(branch(x), branch(3.0 * x), 1e-4, 1e-5));
}

TEST(VitModel, BadOptionsNameTheProblem) {
  EXPECT_NE(error_of([] { vit::parse_norm_sites("pln", 4, "ffn:ln"); }).find("unknown site 'ffn'"),
            std::string::npos);
  EXPECT_NE(error_of([] { vit::parse_norm_sites("pln", 4, "final"); }).find("entry 'final' is not site:kind"),
            std::string::npos);
  EXPECT_NE(error_of([] { vit::parse_norm_sites("bn", 4, ""); }).find("norm must be ln, pln, pls or none, got 'bn'"),
            std::string::npos);
  const auto options = [](auto change) {
    vit::ViTOptions o;
    o.norms = vit::parse_norm_sites("pln", 8, "");
    change(o);
    return error_of([&] { vit::VisionTransformer net(o); });
  };
  EXPECT_NE(options([](auto& o) { o.norms.mlp.group = 48; }).find("group 48 of the mlp norm (pln) must divide the width 128"),
            std::string::npos);
  EXPECT_NE(options([](auto& o) { o.heads = 3; }).find("heads 3 must divide the width 128"), std::string::npos);
  EXPECT_NE(options([](auto& o) { o.patch = 5; }).find("patch 5 must divide the image size 28"), std::string::npos);
  EXPECT_NE(options([](auto& o) { o.act = "tanh"; }).find("act must be gelu, relu, silu, sat or none, got 'tanh'"),
            std::string::npos);
  EXPECT_NE(options([](auto& o) { o.drop_path = 1.0; }).find("drop_path must be in [0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { vit::size_defaults("huge"); }).find("size must be micro, tiny or small, got 'huge'"),
            std::string::npos);
  Config c = vit::schema().table().defaults();
  c["width"] = -1;
  EXPECT_NE(error_of([&] { vit::schema().table().validate(c); }).find("width must be >= 0"), std::string::npos);
}

TEST(VitModel, DropPathOnlyInTraining) {
  torch::manual_seed(0);
  const auto x = torch::ones({1000, 3, 4});
  EXPECT_TRUE(torch::equal(vit::drop_path(x, 0.3, false), x));
  const auto y = vit::drop_path(x, 0.3, true);
  const auto kept = y.select(2, 0).select(1, 0).gt(0).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.7, 0.06);
  EXPECT_TRUE(torch::allclose(y.masked_select(y.gt(0)), torch::full({1}, 1.0 / 0.7)));
}

Config tiny_run_config() {
  Config c = vit::schema().table().defaults();
  c.update(Config{{"n_train", 96}, {"n_test", 64}, {"width", 16}, {"blocks", 1}, {"heads", 2}, {"group", 4},
                  {"epochs", 3}, {"batch_size", 32}, {"warmup", 3}, {"drop_path", 0.1}, {"label_smoothing", 0.1}});
  return c;
}

TEST(VitTraining, CheckpointOfAnotherConfigurationOrCorruptIsAnError) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
  torch::set_num_threads(1);
  const auto dir = fresh_dir("vit-ckpt-errors");
  Config c = tiny_run_config();
  c["epochs"] = 2;
  EXPECT_THROW(vit::train_vit(c, {dir, false, c10::kCPU, 1}), SessionStopped);
  Config other = c;
  other["lr"] = 0.5;
  const auto message = error_of([&] { vit::train_vit(other, {dir, true}); });
  EXPECT_NE(message.find("was written with another configuration (lr: 0.001 -> 0.5)"), std::string::npos) << message;
  // The device is not among what a checkpoint must match: it resumes on another.
  Config moved = c;
  moved["device"] = "cuda:3";
  const auto resumed = vit::train_vit(moved, {dir, true});
  EXPECT_EQ(resumed["epochs_done"].get<int64_t>(), 2);
  {
    std::ofstream(dir / "checkpoint.safetensors", std::ios::binary | std::ios::trunc) << "not a checkpoint";
  }
  const auto corrupt = error_of([&] { vit::train_vit(c, {dir, true}); });
  EXPECT_NE(corrupt.find("checkpoint.safetensors: not a safetensors file pln can read"), std::string::npos) << corrupt;
  // Without --resume the run starts again and replaces the stale checkpoint.
  EXPECT_EQ(vit::train_vit(c, {dir})["epochs_done"].get<int64_t>(), 2);
  fs::remove_all(dir);
}

TEST(VitTraining, BadTrainingKeysNameTheProblem) {
  // The key table rejects them before anything is written or loaded.
  const auto error_for = [&](const char* key, const Config& value) {
    Config c = tiny_run_config();
    c[key] = value;
    return error_of([&] { vit::schema().table().validate(c); });
  };
  EXPECT_NE(error_for("label_smoothing", 1.0).find("label_smoothing must be in [0, 1), got 1"), std::string::npos);
  EXPECT_NE(error_for("clip_grad", -1.0).find("clip_grad must be >= 0"), std::string::npos);
  EXPECT_NE(error_for("warmup", -2).find("warmup must be >= 0"), std::string::npos);
  EXPECT_NE(error_for("epochs", 0).find("epochs must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_for("norm_sites", "attn:bn").find("norm_sites entry 'attn:bn'"), std::string::npos);
}

TEST(VitTraining, DivergenceKeepsTheLastFiniteParameters) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
  torch::set_num_threads(1);
  const auto dir = fresh_dir("vit-diverge");
  Config c = tiny_run_config();
  c.update(Config{{"lr", 1e30}, {"warmup", 0}, {"clip_grad", 0.0}});
  const auto summary = vit::train_vit(c, {dir});
  EXPECT_GE(summary["diverged_at"].get<int64_t>(), 1);
  for (const char* key : {"test_top1", "train_acc", "final_loss", "train_eval_loss"}) {
    EXPECT_TRUE(std::isfinite(summary[key].get<double>())) << key;
  }
  EXPECT_FALSE(fs::exists(dir / "checkpoint.safetensors"));  // the diverged epoch is not checkpointed
  fs::remove_all(dir);
}

TEST(VitRuns, SmokeRunReportsTheContract) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
  const auto dir = fresh_dir("vit-smoke");
  RunRequest request;
  request.preset = "smoke";
  request.out = dir;
  request.threads = 2;
  const auto summary = run_experiment(find_experiment("vit"), request);
  for (const char* key : {"test_top1", "test_top5", "train_acc", "seconds", "best_test_top1", "final_loss"}) {
    EXPECT_TRUE(std::isfinite(summary[key].get<double>())) << key;
  }
  EXPECT_GE(summary["test_top5"].get<double>(), summary["test_top1"].get<double>());
  EXPECT_GT(summary["test_top1"].get<double>(), 0.2);  // chance is 0.1
  EXPECT_EQ(read_csv(dir / "epochs.csv").rows.size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "checkpoint.safetensors"));
  // --resume of a finished run takes no step and reports the same figures.
  request.resume = true;
  const auto again = run_experiment(find_experiment("vit"), request);
  EXPECT_EQ(again["test_top1"], summary["test_top1"]);
  EXPECT_EQ(again["train_acc"], summary["train_acc"]);
  // An experiment without checkpoints refuses --resume.
  Experiment without = find_experiment("pinn");
  without.resumable = false;
  request.out = dir / "pinn";
  EXPECT_NE(error_of([&] { run_experiment(without, request); }).find("pinn keeps no checkpoint"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(VitPlots, GroupSweepFromRecords) {
  const auto dir = fresh_dir("vit-plot");
  CsvTable t;
  t.header = {"cell", "group", "seed", "norm", "labels", "norm_sites", "best_test_top1", "test_top5", "train_acc"};
  const auto row = [&](const std::string& group, const std::string& norm, const std::string& labels, double best,
                       double train) {
    t.rows.push_back({"c" + std::to_string(t.rows.size()), group, "0", norm, labels, "", std::to_string(best), "0.9",
                      std::to_string(train)});
  };
  row("2", "pln", "clean", 0.50, 0.1);
  row("2", "pln", "clean", 0.70, 0.1);
  row("2", "pln", "clean", 0.60, 0.1);
  row("8", "pln", "clean", 0.80, 0.1);
  row("C", "ln", "clean", 0.75, 0.1);
  row("8", "pln", "random", 0.1, 0.42);
  row("C", "ln", "random", 0.1, 0.30);
  vit::plot_group_sweep(dir, t, dir);
  for (const char* figure : {"accuracy_vs_group", "memorisation_vs_group"}) {
    EXPECT_TRUE(fs::exists(dir / (std::string(figure) + ".png"))) << figure;
    EXPECT_TRUE(fs::exists(dir / (std::string(figure) + ".svg"))) << figure;
  }
  std::ifstream in(dir / "group_sweep.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| 2 | 3 | 0.6000 | 0.5000 | 0.7000 |"), std::string::npos) << md;  // median and range of g = 2
  EXPECT_NE(md.find("| C (LN) | 1 | 0.7500 |"), std::string::npos) << md;
  EXPECT_NE(md.find("### random labels: final training accuracy"), std::string::npos) << md;
  EXPECT_NE(md.find("| 8 | 1 | 0.4200 |"), std::string::npos) << md;
  const auto sweep = read_csv(dir / "plot-data" / "group_sweep_clean.csv");
  ASSERT_EQ(sweep.rows.size(), 2u);  // g = 2 and g = 8; LN is the reference line
  EXPECT_EQ(sweep.rows[0][0], "2");
  CsvTable none = t;
  none.rows.clear();
  EXPECT_NE(error_of([&] { vit::plot_group_sweep(dir, none, dir); }).find("no rows to plot"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(VitGrid, CellsResumeOnlyARunOfTheirOwnSettings) {
  const auto& experiment = find_experiment("vit");
  const auto& spec = find_grid(experiment, "cpu");
  const auto cells = expand_grid(spec);
  ASSERT_EQ(cells.size(), 21u);
  const auto dir = fresh_dir("vit-grid-resume");
  const auto& cell = cells[3];
  const auto resumes = [&] { return cell_command(experiment, spec, cell, dir, 1).back() == "--resume"; };
  EXPECT_TRUE(resumes());  // nothing there yet: --resume starts from the beginning
  fs::create_directories(dir / cell.id);
  Config record = {{"preset", spec.preset}, {"set", cell.sets},
                   {"config", resolve_config(experiment, spec.preset, cell.sets)}};
  const auto write = [&] { write_file_atomic(dir / cell.id / "config.json", record.dump(2)); };
  write();
  EXPECT_TRUE(resumes());  // an interrupted run of this very cell
  record["config"]["epochs"] = 99;
  write();
  EXPECT_FALSE(resumes());  // the preset's values changed since
  record["config"] = resolve_config(experiment, spec.preset, cell.sets);
  record["set"] = std::vector<std::string>{"norm=ln"};
  write();
  EXPECT_FALSE(resumes());  // another cell's run
  // A family without checkpoints starts its cells afresh.
  Experiment without = find_experiment("pinn");
  without.resumable = false;
  EXPECT_NE(cell_command(without, find_grid(without, "smoke"), expand_grid(find_grid(without, "smoke"))[0], dir, 1).back(),
            "--resume");
  fs::remove_all(dir);
}

}  // namespace
