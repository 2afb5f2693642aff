// `pln cnn`: configurable CNNs on image data with clean or fixed random
// labels; with random labels the headline is the final training accuracy
// (memorisation capacity of PLN-Nets against activation networks).

#include "common/grid.h"
#include "images/images.h"
#include "images/models.h"
#include "images/train.h"

namespace pln::exp {

namespace {

Config cnn_preset(const std::string& name) {
  Config c = images::image_defaults();
  c.update(Config{{"group", 4}});
  if (name == "smoke") {
    c.update(Config{{"n_train", 256}, {"n_test", 256}, {"width", 8}, {"epochs", 2}, {"batch_size", 64}});
  } else if (name == "cpu") {
    c.update(Config{{"n_train", 1000}, {"n_test", 2000}, {"width", 32}, {"depth", 2}, {"epochs", 40}});
  } else if (name == "paper") {
    c.update(Config{{"data", "cifar10"}, {"width", 64}, {"depth", 2}, {"epochs", 100}, {"augment", true},
                    {"weight_decay", 5e-4}});
  }
  return c;
}

Config cnn_run(const Config& c, const RunContext& ctx) {
  images::BlockSpec spec{get_string(c, "norm"), get_int(c, "group"), get_string(c, "act"), get_string(c, "axis")};
  return images::train_classifier(
      c, ctx,
      [spec](const Config& cfg, int64_t in, int64_t size, int64_t classes) {
        auto net = images::make_cnn(in, size, get_int(cfg, "width"), get_int(cfg, "depth"), classes, spec);
        images::init_weights(*net, get_double(cfg, "init_scale"), get_double(cfg, "bias_init"));
        return net;
      },
      1, "cnn");
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
  Experiment e;
  e.name = "cnn";
  e.description = "CNNs with PLN/PLS/LN/BN/no norm on Fashion-MNIST or CIFAR-10, clean or fixed random labels";
  e.presets = {"smoke", "cpu", "paper"};
  e.preset = cnn_preset;
  e.run = cnn_run;
  e.metrics = {"train_acc", "test_acc", "final_loss", "seconds"};
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
