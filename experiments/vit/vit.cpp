// `pln vit`: presets and grids. The grouping sweep runs the same ViT with PLN(g)
// at every norm site for g in {2, 4, 8, 16, 32, 64} and with LN (g = C).

#include "vit/vit.h"

#include "sweep/cells.h"
#include "vit/train.h"

namespace pln::exp {

namespace {

// PLN(g) at every norm site for each g, and LN (g = C) as the reference.
GridAxis group_axis(const std::vector<int64_t>& groups) {
  GridAxis axis{"group", {}};
  for (const auto g : groups) axis.values.push_back({std::to_string(g), Config{{"norm", "pln"}, {"group", g}}});
  axis.values.push_back({"C", Config{{"norm", "ln"}}});
  return axis;
}

}  // namespace

Experiment vit_experiment() {
  Experiment e("vit", "Vision Transformer with PLN/PLS/LN/no norm at each norm site, and the grouping sweep",
               vit::schema().table());
  // Warm-up in steps: half an epoch of 512 images in batches of 32; one epoch
  // of 4,000 in batches of 128 (32 steps); five epochs of CIFAR-10's 50,000 (5 x 391).
  e.presets = {{"smoke", {{"n_train", 512}, {"n_test", 256}, {"width", 32}, {"blocks", 2}, {"heads", 2}, {"group", 4},
                          {"epochs", 2}, {"batch_size", 32}, {"lr", 3e-3}, {"warmup", 8}}},
               {"cpu", {{"n_train", 4000}, {"n_test", 2000}, {"epochs", 12}, {"lr", 2e-3}, {"warmup", 32}}},
               {"paper", {{"data", "cifar10"}, {"size", "tiny"}, {"patch", 4}, {"epochs", 100}, {"augment", true},
                          {"warmup", 1955}, {"label_smoothing", 0.1}, {"drop_path", 0.1}}}};
  e.run = vit::train_vit;
  e.resumable = true;
  e.resolved_in_summary = {"width", "blocks", "heads"};
  e.metrics = {"test_top1", "test_top5", "best_test_top1", "train_acc", "final_loss", "seconds"};
  // A network whose parameters are not finite from the start (init_scale=1e308)
  // has no finite loss to report, and records it as "nan".
  e.may_be_non_finite = {"final_loss", "train_eval_loss", "test_loss"};
  const std::vector<int64_t> groups = {2, 4, 8, 16, 32, 64};
  const auto seeds = integer_axis("seed", {0, 1, 2});
  e.grids["smoke"] = {"PLN(4) and LN, 32 wide, 2 blocks, 512 Fashion-MNIST images, 2 epochs", "smoke",
                      Config::object(), {group_axis({4})}};
  e.grids["cpu"] = {"micro ViT (128 wide, 4 blocks, patch 7), PLN(g) for g in 2..64 and LN, 3 seeds, "
                    "4,000 Fashion-MNIST images, 12 epochs (21 cells)",
                    "cpu", Config::object(), {group_axis(groups), seeds}};
  e.grids["cpu-random"] = {"the cpu sweep on 1,000 images with fixed random labels, 40 epochs (21 cells)", "cpu",
                           Config{{"labels", "random"}, {"n_train", 1000}, {"epochs", 40}, {"weight_decay", 0.0}, {"warmup", 8}},
                           {group_axis(groups), seeds}};
  e.grids["paper"] = {"tiny ViT (192 wide, 12 blocks, patch 4) on CIFAR-10, PLN(g) for g in 2..64 and LN, 3 seeds "
                      "(21 cells)",
                      "paper", Config::object(), {group_axis(groups), seeds}};
  e.grids["paper-random"] = {"the paper sweep with fixed random labels, no augmentation or regularisation (21 cells)",
                             "paper",
                             Config{{"labels", "random"}, {"augment", false}, {"label_smoothing", 0.0},
                                    {"drop_path", 0.0}, {"weight_decay", 0.0}},
                             {group_axis(groups), seeds}};
  e.plot_grid = vit::plot_group_sweep;
  e.plot_run = vit::plot_run;
  return e;
}

}  // namespace pln::exp
