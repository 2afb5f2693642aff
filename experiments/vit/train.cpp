#include "vit/train.h"

#include "run/device.h"
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

void check_norm_sites(const std::string& sites) { (void)parse_norm_sites("pln", 1, sites); }

// The seed of one epoch's batch order: distinct for every (seed, epoch) with
// epoch < 1000003 (a prime above any epoch count), and never the run's own
// seed, which the initialisation draws from.
uint64_t epoch_seed(int64_t seed, int64_t epoch) {
  return static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(epoch) + 1;
}

}  // namespace

KeyTable key_table() {
  std::vector<Key> keys = key::image_data();
  keys.insert(keys.end(),
              {choice("size", "micro", {"micro", "tiny", "small"}, "width, blocks and heads: 128/4/4, 192/12/3, 384/12/6"),
               integer("width", 0, at_least(0), "token features (0: the size's)"),
               integer("blocks", 0, at_least(0), "transformer blocks (0: the size's)"),
               integer("heads", 0, at_least(0), "attention heads, dividing the width (0: the size's)"),
               integer("patch", 7, at_least(1), "patch side in pixels, dividing the image's"),
               integer("mlp_ratio", 4, at_least(1), "the MLP's hidden features per token feature"),
               choice("norm", "pln", {"ln", "pln", "pls", "none"}, "the norm at every site"),
               integer("group", 8, at_least(1), "features per group of pln and pls"),
               text("norm_sites", "", "site:kind,...", check_norm_sites,
                    "other norms at some sites (attn, mlp, final), e.g. final:ln"),
               choice("act", "gelu", {"gelu", "relu", "silu", "sat", "none"}, "the MLP's activation"),
               number("drop_path", 0.0, right_open(0, 1), "stochastic depth's drop probability"),
               integer("epochs", 10, at_least(1), "epochs to train"),
               integer("batch_size", 128, at_least(1), "images per step"),
               key::lr(1e-3),
               number("weight_decay", 0.05, at_least(0), "AdamW's decoupled weight decay (matrices only)"),
               key::schedule("cosine"),
               key::warmup(0),
               key::lr_floor(0.0),
               key::step_size(1000),
               key::gamma(0.1),
               number("label_smoothing", 0.0, right_open(0, 1), "cross-entropy's label smoothing"),
               number("clip_grad", 1.0, at_least(0), "gradient norm clip (0: none)"),
               integer("seed", 0, "seed of the initialisation, batch order and drop path"),
               key::device(),
               key::amp()});
  return KeyTable("vit", std::move(keys),
      [](const Config& c) {
        // The network's shape (heads and groups dividing the width) and the
        // patch against the data set's image side, before anything is written
        // or loaded (the data sets pln reads have a fixed side each).
        const int64_t side = get_string(c, "data") == "cifar10" ? 32 : 28;
        (void)options_from_config(c, 1, side, 10);
        check_float32_range(c, "lr");  // the network is float32
        check_amp(c);
      });
}

ViTOptions options_from_config(const Config& c, int64_t channels, int64_t size, int64_t classes) {
  const auto defaults = size_defaults(get_string(c, "size"));
  const auto pick = [&c](const char* key, int64_t fallback) {
    const int64_t v = get_int(c, key);
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
  const double smoothing = get_double(c, "label_smoothing"), clip = get_double(c, "clip_grad");
  const double weight_decay = get_double(c, "weight_decay");
  const auto started = std::chrono::steady_clock::now();

  const auto data = prepare_images(c, 1);
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
