// `pln cnn`: configurable CNNs on image data with clean or fixed random
// labels; with random labels the headline is the final training accuracy
// (memorisation capacity of PLN-Nets against activation networks).

#include "sweep/cells.h"
#include "images/images.h"
#include "images/models.h"
#include "images/train.h"

namespace pln::exp {

namespace {

const Schema<images::ImagesConfig>& cnn_schema() {
  static const auto schema = images::schema("cnn", /*width=*/16, /*group=*/4, /*lr=*/0.05);
  return schema;
}

Config cnn_run(const Config& record, const RunContext& ctx) {
  const auto c = cnn_schema().read(record);
  const auto build = [&c](const images::BlockSpec& spec, int64_t channels, int64_t size, int64_t classes) {
    return images::make_cnn(channels, size, c.width, c.depth, classes, spec);
  };
  return images::run_classifier(c, record, ctx, build, 1, "cnn");
}

GridAxis models(bool with_mixed) {
  GridAxis axis{"model",
                {{"PLN(4)", Config{{"norm", "pln"}, {"group", 4}, {"act", "none"}, {"axis", "channel"}}},
                 {"PLS(4)", Config{{"norm", "pls"}, {"group", 4}, {"act", "none"}, {"axis", "channel"}}},
                 {"LN", Config{{"norm", "ln"}, {"group", 4}, {"act", "none"}, {"axis", "channel"}}},
                 {"ReLU", Config{{"norm", "none"}, {"group", 4}, {"act", "relu"}, {"axis", "channel"}}},
                 {"BN+ReLU", Config{{"norm", "bn"}, {"group", 4}, {"act", "relu"}, {"axis", "channel"}}}}};
  if (with_mixed) {
    axis.values.push_back({"PLN(4)-mixed", Config{{"norm", "pln"}, {"group", 4}, {"act", "none"}, {"axis", "mixed"}}});
  }
  return axis;
}

GridAxis labels() {
  return {"labels", {{"clean", Config{{"labels", "clean"}}}, {"random", Config{{"labels", "random"}}}}};
}

}  // namespace

Experiment cnn_experiment() {
  Experiment e("cnn", "CNNs with PLN/PLS/LN/BN/no norm on Fashion-MNIST or CIFAR-10, clean or fixed random labels",
               cnn_schema().table());
  e.presets = {
      {"smoke", {{"n_train", 256}, {"n_test", 256}, {"width", 8}, {"epochs", 2}, {"batch_size", 64}}},
      {"cpu", {{"n_train", 1000}, {"n_test", 2000}, {"width", 32}, {"depth", 2}, {"epochs", 40}}},
      {"paper", {{"data", "cifar10"}, {"width", 64}, {"depth", 2}, {"epochs", 100}, {"augment", true},
                 {"weight_decay", 5e-4}}}};
  e.run = cnn_run;
  e.resumable = true;
  e.metrics = {"train_acc", "test_acc", "final_loss", "seconds"};
  // The best epoch's test accuracy, since records were first shipped.
  e.later_metrics = {"best_test_acc", "best_epoch"};
  // A network whose parameters are not finite from the start (init_scale=1e308)
  // has no finite loss to report, and records it as "nan".
  e.may_be_non_finite = {"final_loss", "train_eval_loss", "test_loss"};
  e.grids["smoke"] = {"PLN(4) and ReLU CNNs on 256 random-label images", "smoke", Config{{"labels", "random"}},
                      {{"model", {models(false).values[0], models(false).values[3]}}}};
  e.grids["cpu"] = {"5 models x clean/random labels on 1,000 Fashion-MNIST images, width 32, depth 2, 40 epochs (10 cells)", "cpu",
                    Config::object(), {models(false), labels()}};
  e.grids["paper"] = {"6 models (with mixed-axis PLN) x clean/random labels x 3 seeds on CIFAR-10 (36 cells)",
                      "paper", Config::object(), {models(true), labels(), integer_axis("seed", {0, 1, 2})}};
  e.plot_grid = images::plot_accuracy_table;
  e.plot_run = images::plot_run;
  return e;
}

}  // namespace pln::exp
