#include "images/train.h"

#include "run/device.h"
#include "train/image_data.h"
#include "train/schedule.h"

#include <fmt/format.h>

#include <chrono>
#include <limits>

namespace pln::exp::images {

Schema<ImagesConfig> schema(const std::string& family, int64_t width, int64_t group, double lr,
                            const Schema<ImagesConfig>::Check& check) {
  using C = ImagesConfig;
  const auto block = [](auto member, Key key) { return field(&C::block, field(member, std::move(key))); };
  const auto schedule = [](Field<Schedule> f) { return field(&C::schedule, std::move(f)); };
  return Schema<C>(
      family,
      concat(fields(&C::images, key::image_data()),
             {block(&BlockSpec::norm,
                    choice("norm", "pln", {"pln", "pls", "ln", "bn", "none"}, "the norm after each conv")),
              block(&BlockSpec::group, integer("group", group, at_least(1), "channels per group of pln and pls")),
              block(&BlockSpec::act, choice("act", "none", {"none", "relu", "tanh", "sat", "silu"},
                                            "the activation after each norm")),
              block(&BlockSpec::axis, choice("axis", "channel", {"channel", "mixed"},
                                             "mixed: every other block groups pixels along the width")),
              field(&C::width, integer("width", width, at_least(1), "channels of the first stage")),
              field(&C::depth, integer("depth", 1, at_least(1), "cnn: conv blocks per stage")),
              field(&C::epochs, integer("epochs", 10, at_least(1), "epochs to train")),
              field(&C::batch_size, integer("batch_size", 128, at_least(1), "images per step")),
              field(&C::optimizer, choice("optimizer", "sgd", {"sgd", "adam"}, "SGD with momentum, or Adam")),
              schedule(key::lr(lr)),
              field(&C::momentum, number("momentum", 0.9, at_least(0), "SGD's momentum")),
              field(&C::weight_decay, number("weight_decay", 0.0, at_least(0), "L2 weight decay")),
              schedule(key::schedule("cosine")),
              schedule(key::warmup(0)),
              schedule(key::lr_floor(0.0)),
              schedule(key::step_size(1000)),
              schedule(key::gamma(0.1)),
              field(&C::init_scale, number("init_scale", 1.0, "He initialisation's weights times this")),
              // Within float32's range: the biases are float32.
              field(&C::bias_init, number("bias_init", 0.0,
                                          closed(-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()),
                                          "every bias's initial value")),
              field(&C::seed, integer("seed", 0, "seed of the initialisation and the batch order")),
              field(&C::device, key::device()),
              field(&C::amp, key::amp())}),
      [check, family](const C& c) {
        check_group_divides(c.block.norm, c.width, c.block.group);
        // The largest stage's 3x3 convolutions (4 x width channels in cnn's
        // third stage, 8 x width in vgg's fourth), depth of them in each of
        // cnn's three stages and 13 in vgg; and the first stage's
        // activations, a batch of 32 x 32 images of width channels.
        const bool cnn = family == "cnn";
        check_network_size(cnn ? "the network (3 x depth convolutions of 9 x (4 width)^2 parameters)"
                               : "the network (13 convolutions of up to 9 x (8 width)^2 parameters)",
                           cnn ? 3 * std::min<int64_t>(c.depth, int64_t{1} << 60) : 13,
                           {9, cnn ? 4 : 8, c.width, cnn ? 4 : 8, c.width});
        check_elements("batch_size x width x 32^2 (the first stage's activations)", {c.batch_size, c.width, 32 * 32});
        check_float32_range("lr", c.schedule.lr);  // the networks are float32
        check_amp(c.amp, c.device);
        if (check) check(c);
      });
}

Config run_classifier(const ImagesConfig& c, const Config& record, const RunContext& ctx, const NetworkBuilder& build,
                      int64_t min_size, const std::string& experiment) {
  const double momentum = c.momentum, weight_decay = c.weight_decay;
  const bool sgd = c.optimizer == "sgd";
  const auto started = std::chrono::steady_clock::now();

  const auto data = prepare_images(c.images, min_size);
  torch::manual_seed(static_cast<uint64_t>(c.seed));
  auto net = build(c.block, data.x_train.size(1), data.x_train.size(2), data.classes);
  init_weights(*net, c.init_scale, c.bias_init);
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
  const ClassifierTraining training{c.epochs, c.batch_size, c.seed, c.amp == "bf16", c.schedule};
  const auto r = train_classifier(training, record, ctx, data, *net, [&](const torch::Tensor& x) { return net->forward(x); }, hooks);
  return Config{{"train_acc", r.train.top1}, {"test_acc", r.test.top1}, {"best_test_acc", r.best_top1},
                {"best_epoch", r.best_epoch}, {"final_loss", r.final_loss},
                {"train_eval_loss", r.train.loss}, {"test_loss", r.test.loss}, {"epochs_done", r.epochs_done},
                {"diverged_at", r.diverged_at}, {"n_params", r.n_params}, {"seconds", r.seconds},
                {"images_per_s", r.images_per_s}};
}

}  // namespace pln::exp::images
