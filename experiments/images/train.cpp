#include "images/train.h"

#include "run/device.h"
#include "train/image_data.h"
#include "train/schedule.h"

#include <fmt/format.h>

#include <chrono>
#include <limits>

namespace pln::exp::images {

KeyTable key_table(const std::string& family, int64_t width, int64_t group, double lr, const KeyTable::Check& check) {
  std::vector<Key> keys = key::image_data();
  keys.insert(keys.end(),
              {choice("norm", "pln", {"pln", "pls", "ln", "bn", "none"}, "the norm after each conv"),
               integer("group", group, at_least(1), "channels per group of pln and pls"),
               choice("act", "none", {"none", "relu", "tanh", "sat", "silu"}, "the activation after each norm"),
               choice("axis", "channel", {"channel", "mixed"}, "mixed: every other block groups pixels along the width"),
               integer("width", width, at_least(1), "channels of the first stage"),
               integer("depth", 1, at_least(1), "cnn: conv blocks per stage"),
               integer("epochs", 10, at_least(1), "epochs to train"),
               integer("batch_size", 128, at_least(1), "images per step"),
               choice("optimizer", "sgd", {"sgd", "adam"}, "SGD with momentum, or Adam"),
               key::lr(lr),
               number("momentum", 0.9, at_least(0), "SGD's momentum"),
               number("weight_decay", 0.0, at_least(0), "L2 weight decay"),
               key::schedule("cosine"),
               key::warmup(0),
               key::lr_floor(0.0),
               key::step_size(1000),
               key::gamma(0.1),
               number("init_scale", 1.0, "He initialisation's weights times this"),
               // Within float32's range: the biases are float32.
               number("bias_init", 0.0, closed(-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()),
                      "every bias's initial value"),
               integer("seed", 0, "seed of the initialisation and the batch order"),
               key::device(),
               key::amp()});
  return KeyTable(family, std::move(keys),
      [check](const Config& c) {
        check_group_divides(get_string(c, "norm"), get_int(c, "width"), get_int(c, "group"));
        check_float32_range(c, "lr");  // the networks are float32
        check_amp(c);
        if (check) check(c);
      });
}

Config run_classifier(const Config& c, const RunContext& ctx, const NetworkBuilder& build, int64_t min_size,
                      const std::string& experiment) {
  const double momentum = get_double(c, "momentum"), weight_decay = get_double(c, "weight_decay");
  const bool sgd = get_string(c, "optimizer") == "sgd";
  const auto started = std::chrono::steady_clock::now();

  const auto data = prepare_images(c, min_size);
  torch::manual_seed(static_cast<uint64_t>(get_int(c, "seed")));
  const BlockSpec spec{get_string(c, "norm"), get_int(c, "group"), get_string(c, "act"), get_string(c, "axis")};
  auto net = build(spec, data.x_train.size(1), data.x_train.size(2), data.classes);
  init_weights(*net, get_double(c, "init_scale"), get_double(c, "bias_init"));
  net->to(ctx.device);
  ClassifierHooks hooks;
  hooks.experiment = experiment;
  hooks.started = started;
  hooks.optimizer = [&](torch::nn::Module& network, double lr) -> std::unique_ptr<torch::optim::Optimizer> {
    if (sgd) {
      return std::make_unique<torch::optim::SGD>(
          network.parameters(), torch::optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
    }
    return std::make_unique<torch::optim::Adam>(network.parameters(),
                                                torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  };
  const auto r = train_classifier(c, ctx, data, *net, [&](const torch::Tensor& x) { return net->forward(x); }, hooks);
  return Config{{"train_acc", r.train.top1}, {"test_acc", r.test.top1}, {"best_test_acc", r.best_top1},
                {"best_epoch", r.best_epoch}, {"final_loss", r.final_loss},
                {"train_eval_loss", r.train.loss}, {"test_loss", r.test.loss}, {"epochs_done", r.epochs_done},
                {"diverged_at", r.diverged_at}, {"n_params", r.n_params}, {"seconds", r.seconds},
                {"images_per_s", r.images_per_s}};
}

}  // namespace pln::exp::images
