#include "images/train.h"

#include "train/image_data.h"

#include <chrono>

namespace pln::exp::images {

Config image_defaults() {
  Config c = image_data_defaults();
  c.update(Config{{"augment", false}, {"norm", "pln"}, {"group", 8}, {"act", "none"}, {"axis", "channel"}, {"width", 16}, {"depth", 1},
          {"epochs", 10}, {"batch_size", 128}, {"optimizer", "sgd"}, {"lr", 0.05}, {"momentum", 0.9},
          {"weight_decay", 0.0}, {"schedule", "cosine"}, {"warmup", 0}, {"lr_floor", 0.0},
          {"step_size", 1000}, {"gamma", 0.1}, {"init_scale", 1.0}, {"bias_init", 0.0}, {"seed", 0},
          {"device", "cpu"}, {"amp", "none"}});
  return c;
}

Config run_classifier(const Config& c, const RunContext& ctx, const NetworkBuilder& build, int64_t min_size,
                      const std::string& experiment) {
  require_one_of(c, "optimizer", {"sgd", "adam"}, experiment);
  const double momentum = require_range<double>(c, "momentum", 0.0, kUnbounded<double>, experiment);
  const double weight_decay = require_range<double>(c, "weight_decay", 0.0, kUnbounded<double>, experiment);
  check_classifier_keys(c, experiment);
  const bool sgd = get_string(c, "optimizer") == "sgd";
  const auto started = std::chrono::steady_clock::now();

  const auto data = prepare_images(c, min_size, experiment);
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
  return Config{{"train_acc", r.train.top1}, {"test_acc", r.test.top1}, {"final_loss", r.final_loss},
                {"train_eval_loss", r.train.loss}, {"test_loss", r.test.loss}, {"epochs_done", r.epochs_done},
                {"diverged_at", r.diverged_at}, {"n_params", r.n_params}, {"seconds", r.seconds},
                {"images_per_s", r.images_per_s}};
}

}  // namespace pln::exp::images
