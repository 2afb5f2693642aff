#include "vit/train.h"

#include "train/image_data.h"
#include "train/schedule.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace pln::exp::vit {

namespace {

// Weight decay applies to the matrices of the linear layers and the patch
// embedding, not to biases, norm parameters, the CLS token or positions.
std::vector<torch::optim::OptimizerParamGroup> parameter_groups(VisionTransformer& net, double weight_decay) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& item : net->named_parameters()) {
    const bool matrix = item.value().dim() >= 2 && item.key() != "cls_token" && item.key() != "pos_embed";
    (matrix ? decay : no_decay).push_back(item.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(1e-3).weight_decay(weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(1e-3).weight_decay(0.0)));
  return groups;
}

uint64_t epoch_seed(int64_t seed, int64_t epoch) {
  return static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(epoch) + 1;
}

}  // namespace

Config vit_defaults() {
  Config c = image_data_defaults();
  c.update(Config{{"augment", false}, {"size", "micro"}, {"width", 0}, {"blocks", 0}, {"heads", 0},
                  {"patch", 7}, {"mlp_ratio", 4}, {"norm", "pln"}, {"group", 8}, {"norm_sites", ""},
                  {"act", "gelu"}, {"drop_path", 0.0}, {"epochs", 10}, {"batch_size", 128}, {"lr", 1e-3},
                  {"weight_decay", 0.05}, {"schedule", "cosine"}, {"warmup", 0}, {"lr_floor", 0.0},
                  {"step_size", 1000}, {"gamma", 0.1}, {"label_smoothing", 0.0},
                  {"clip_grad", 1.0}, {"seed", 0}, {"device", "cpu"}, {"amp", "none"}});
  return c;
}

ViTOptions options_from_config(const Config& c, int64_t channels, int64_t size, int64_t classes) {
  const auto defaults = size_defaults(get_string(c, "size"));
  const auto pick = [&c](const char* key, int64_t fallback) {
    const int64_t v = get_int(c, key);
    if (v < 0) throw std::invalid_argument(fmt::format("vit: {} must be >= 0 (0: the size's), got {}", key, v));
    return v == 0 ? fallback : v;
  };
  ViTOptions o;
  o.image_size = size;
  o.in_channels = channels;
  o.classes = classes;
  o.patch = get_int(c, "patch");
  o.width = pick("width", defaults.width);
  o.blocks = pick("blocks", defaults.blocks);
  o.heads = pick("heads", defaults.heads);
  o.mlp_ratio = get_int(c, "mlp_ratio");
  o.norms = parse_norm_sites(get_string(c, "norm"), get_int(c, "group"), get_string(c, "norm_sites"));
  o.act = get_string(c, "act");
  o.drop_path = get_double(c, "drop_path");
  validate(o);
  return o;
}

Config train_vit(const Config& c, const RunContext& ctx) {
  const double smoothing = require_range<double>(c, "label_smoothing", 0.0, 1.0, "vit", false);
  const double clip = require_range<double>(c, "clip_grad", 0.0, kUnbounded<double>, "vit");
  const double weight_decay = require_range<double>(c, "weight_decay", 0.0, kUnbounded<double>, "vit");
  check_classifier_keys(c, "vit");
  const auto started = std::chrono::steady_clock::now();
  // Check the network's options before the data loads: a bad key fails at once.
  (void)options_from_config(c, 1, std::max<int64_t>(1, get_int(c, "patch")), 10);

  const auto data = prepare_images(c, 1, "vit");
  const auto options = options_from_config(c, data.x_train.size(1), data.x_train.size(2), data.classes);
  torch::manual_seed(static_cast<uint64_t>(get_int(c, "seed")));
  VisionTransformer net(options);
  net->to(ctx.device);
  ClassifierHooks hooks;
  hooks.experiment = "vit";
  hooks.started = started;
  hooks.optimizer = [&](torch::nn::Module&, double lr) {
    auto optimizer = std::make_unique<torch::optim::AdamW>(parameter_groups(net, weight_decay));
    set_learning_rate(*optimizer, lr);
    return std::unique_ptr<torch::optim::Optimizer>(std::move(optimizer));
  };
  hooks.loss = torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing);
  hooks.clip_grad = clip;
  hooks.epoch_seed = [seed = get_int(c, "seed")](int64_t epoch) { return epoch_seed(seed, epoch); };
  hooks.top5 = true;
  const auto r = train_classifier(c, ctx, data, *net, [&](const torch::Tensor& x) { return net->forward(x); }, hooks);
  return Config{{"test_top1", r.test.top1}, {"test_top5", r.test.top5}, {"best_test_top1", r.best_top1},
                {"best_epoch", r.best_epoch}, {"train_acc", r.train.top1}, {"final_loss", r.final_loss},
                {"train_eval_loss", r.train.loss}, {"test_loss", r.test.loss}, {"epochs_done", r.epochs_done},
                {"diverged_at", r.diverged_at}, {"n_params", r.n_params}, {"width", options.width},
                {"blocks", options.blocks}, {"heads", options.heads}, {"seconds", r.seconds},
                {"images_per_s", r.images_per_s}};
}

}  // namespace pln::exp::vit
