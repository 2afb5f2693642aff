// `pln vgg`: the CIFAR VGG-16, each conv followed by a norm and an activation:
// PLN(8) as the only nonlinearity, or an activation (ReLU, Tanh, SAT, SiLU)
// with no norm, or BN/LN with ReLU/Tanh; He initialisation scaled by
// init_scale. Its `paper` grid (the paper's Figure 4, 945 cells), `norms` and
// the VGG-Bias study (108 cells) are meant for a cluster:
// `pln grid vgg --preset paper --emit slurm`.

#include "sweep/cells.h"
#include "images/images.h"
#include "images/models.h"
#include "images/train.h"

#include <fmt/format.h>

#include <cmath>

namespace pln::exp {

namespace {

// The widths make_vgg16 takes (images/models.cpp): its convs have width x {1, 2, 4, 8} channels.
void check_width(const images::ImagesConfig& c) {
  if (c.width % 8 != 0) throw ConfigError(fmt::format("width must be a multiple of 8, got {}", c.width));
}

const Schema<images::ImagesConfig>& vgg_schema() {
  static const auto schema = images::schema("vgg", /*width=*/64, /*group=*/8, /*lr=*/0.01, check_width);
  return schema;
}

Config vgg_run(const Config& record, const RunContext& ctx) {
  const auto c = vgg_schema().read(record);
  const auto build = [&c](const images::BlockSpec& spec, int64_t channels, int64_t, int64_t classes) {
    return images::make_vgg16(channels, c.width, classes, spec);
  };
  return images::run_classifier(c, record, ctx, build, 32, "vgg");
}

Config variant(const std::string& norm, const std::string& act) {
  return {{"norm", norm}, {"group", 8}, {"act", act}};
}

// The paper's Figure 4: one panel per activation layer of VGG-16. PLN(8) stands
// where the activation would (no other nonlinearity); the other four have no
// normalisation layer, which would hide the init-scale axis.
GridAxis activation_panels() {
  return {"variant",
          {{"PLN(8)", variant("pln", "none")},
           {"ReLU", variant("none", "relu")},
           {"Tanh", variant("none", "tanh")},
           {"SAT", variant("none", "sat")},
           {"SiLU", variant("none", "silu")}}};
}

// This project's normalisation comparison (not a figure of the paper).
GridAxis norm_variants() {
  return {"variant",
          {{"PLN[8]", variant("pln", "none")},
           {"PLS[8]", variant("pls", "none")},
           {"BN+ReLU", variant("bn", "relu")},
           {"LN+ReLU", variant("ln", "relu")},
           {"ReLU", variant("none", "relu")}}};
}

GridAxis learning_rates() { return number_axis("lr", {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1}); }

GridAxis init_scales() {
  std::vector<double> values;
  for (int k = -4; k <= 4; ++k) values.push_back(std::pow(2.0, k / 2.0));
  return number_axis("init_scale", values);
}

GridAxis bias_study_models() {
  GridAxis axis{"variant", {}};
  for (const char* act : {"relu", "tanh"}) {
    for (const char* norm : {"none", "ln", "bn"}) {
      const std::string a = act == std::string("relu") ? "ReLU" : "Tanh";
      const std::string label = norm == std::string("none") ? a : (norm == std::string("ln") ? "LN+" : "BN+") + a;
      axis.values.push_back({label, variant(norm, act)});
    }
  }
  return axis;
}

}  // namespace

Experiment vgg_experiment() {
  Experiment e("vgg", "VGG-16 with PLN(8) as the only nonlinearity, or ReLU/Tanh/SAT/SiLU, or BN/LN; He init x init_scale",
               vgg_schema().table());
  e.presets = {{"smoke", {{"n_train", 128}, {"n_test", 128}, {"width", 8}, {"epochs", 1}, {"batch_size", 64}}},
               {"cpu", {{"n_train", 2000}, {"n_test", 2000}, {"width", 16}, {"epochs", 5}}},
               {"paper", {{"data", "cifar10"}, {"epochs", 60}, {"augment", true}, {"weight_decay", 5e-4}}}};
  e.run = vgg_run;
  e.resumable = true;
  e.metrics = {"train_acc", "test_acc", "final_loss", "seconds"};
  // The best epoch's test accuracy, since records were first shipped.
  e.later_metrics = {"best_test_acc", "best_epoch"};
  // A network whose parameters are not finite from the start (init_scale=1e308)
  // has no finite loss to report, and records it as "nan".
  e.may_be_non_finite = {"final_loss", "train_eval_loss", "test_loss"};
  e.grids["smoke"] = {"PLN(8) and SAT VGG-16 (width 8) on 128 images", "smoke", Config::object(),
                      {{"variant", {activation_panels().values[0], activation_panels().values[3]}}}};
  e.grids["paper"] = {"Figure 4: 5 activation panels (PLN(8), ReLU, Tanh, SAT, SiLU) x 7 lr (0.001..1) x "
                      "9 init scales (1/4..4) x 3 seeds (945 cells), CIFAR-10",
                      "paper", Config::object(),
                      {activation_panels(), learning_rates(), init_scales(), integer_axis("seed", {0, 1, 2})}};
  e.grids["cpu"] = {"Figure 4's panels and axes on 2 cores: 5 activation panels x 7 lr x 9 init scales, one seed "
                    "(315 cells), width 16, 2,000 Fashion-MNIST images, 5 epochs",
                    "cpu", Config::object(),
                    {activation_panels(), learning_rates(), init_scales(), integer_axis("seed", {0})}};
  e.grids["norms"] = {"normalisation comparison: PLN[8], PLS[8], BN+ReLU, LN+ReLU, ReLU x 7 lr x 9 init scales x "
                      "3 seeds (945 cells), CIFAR-10",
                      "paper", Config::object(),
                      {norm_variants(), learning_rates(), init_scales(), integer_axis("seed", {0, 1, 2})}};
  e.grids["norms-cpu"] = {"5 variants x lr {0.01, 0.1} x init scale {1/2, 1, 2}, width 16, 2,000 Fashion-MNIST images "
                          "(30 cells)",
                          "cpu", Config::object(),
                          {norm_variants(), number_axis("lr", {0.01, 0.1}), number_axis("init_scale", {0.5, 1.0, 2.0})}};
  e.grids["bias"] = {"VGG-Bias: ReLU/Tanh x {no norm, LN, BN} x bias init {0..2} x 3 seeds (108 cells), CIFAR-10",
                     "paper", Config::object(),
                     {bias_study_models(), number_axis("bias_init", {0, 0.01, 0.1, 0.5, 1, 2}),
                      integer_axis("seed", {0, 1, 2})}};
  e.plot_grid = images::plot_vgg_grid;
  e.plot_run = images::plot_run;
  return e;
}

}  // namespace pln::exp
