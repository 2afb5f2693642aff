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

const Schema<VitConfig>& schema() {
  using C = VitConfig;
  const auto schedule = [](Field<Schedule> f) { return field(&C::schedule, std::move(f)); };
  static const Schema<C> schema(
      "vit",
      concat(fields(&C::images, key::image_data()),
             {field(&C::size, choice("size", "micro", {"micro", "tiny", "small"},
                                     "width, blocks and heads: 128/4/4, 192/12/3, 384/12/6")),
              field(&C::width, integer("width", 0, at_least(0), "token features (0: the size's)")),
              field(&C::blocks, integer("blocks", 0, at_least(0), "transformer blocks (0: the size's)")),
              field(&C::heads, integer("heads", 0, at_least(0), "attention heads, dividing the width (0: the size's)")),
              field(&C::patch, integer("patch", 7, at_least(1), "patch side in pixels, dividing the image's")),
              field(&C::mlp_ratio, integer("mlp_ratio", 4, at_least(1), "the MLP's hidden features per token feature")),
              field(&C::norm, choice("norm", "pln", {"ln", "pln", "pls", "none"}, "the norm at every site")),
              field(&C::group, integer("group", 8, at_least(1), "features per group of pln and pls")),
              field(&C::norm_sites, text("norm_sites", "", "site:kind,...", check_norm_sites,
                                         "other norms at some sites (attn, mlp, final), e.g. final:ln")),
              field(&C::act, choice("act", "gelu", {"gelu", "relu", "silu", "sat", "none"}, "the MLP's activation")),
              field(&C::drop_path, number("drop_path", 0.0, right_open(0, 1), "stochastic depth's drop probability")),
              field(&C::epochs, integer("epochs", 10, at_least(1), "epochs to train")),
              field(&C::batch_size, integer("batch_size", 128, at_least(1), "images per step")),
              schedule(key::lr(1e-3)),
              field(&C::weight_decay,
                    number("weight_decay", 0.05, at_least(0), "AdamW's decoupled weight decay (matrices only)")),
              schedule(key::schedule("cosine")),
              schedule(key::warmup(0)),
              schedule(key::lr_floor(0.0)),
              schedule(key::step_size(1000)),
              schedule(key::gamma(0.1)),
              field(&C::label_smoothing,
                    number("label_smoothing", 0.0, right_open(0, 1), "cross-entropy's label smoothing")),
              field(&C::clip_grad, number("clip_grad", 1.0, at_least(0), "gradient norm clip (0: none)")),
              field(&C::seed, integer("seed", 0, "seed of the initialisation, batch order and drop path")),
              field(&C::device, key::device()),
              field(&C::amp, key::amp())}),
      [](const C& c) {
        // The network's shape (heads and groups dividing the width) and the
        // patch against the data set's image side, before anything is written
        // or loaded (the data sets pln reads have a fixed side each).
        const int64_t side = c.images.data == "cifar10" ? 32 : 28;
        const ViTOptions o = network_options(c, 1, side, 10);
        // Each block's attention (4 width^2) and MLP (2 mlp_ratio width^2);
        // its largest activations, the MLP's hidden features and the
        // attention's scores, over a batch of every patch and the class token.
        const int64_t tokens = (side / o.patch) * (side / o.patch) + 1;
        check_network_size("the network (blocks x (4 + 2 mlp_ratio) x width^2 parameters)", o.blocks,
                           {4 + 2 * std::min<int64_t>(o.mlp_ratio, int64_t{1} << 32), o.width, o.width});
        check_elements("batch_size x tokens x width x mlp_ratio (the MLP's activations)",
                       {c.batch_size, tokens, o.width, o.mlp_ratio});
        check_elements("batch_size x heads x tokens^2 (the attention's scores)", {c.batch_size, o.heads, tokens, tokens});
        check_float32_range("lr", c.schedule.lr);  // the network is float32
        check_amp(c.amp, c.device);
      });
  return schema;
}

ViTOptions network_options(const VitConfig& c, int64_t channels, int64_t size, int64_t classes) {
  const auto defaults = size_defaults(c.size);
  const auto pick = [](int64_t value, int64_t fallback) { return value == 0 ? fallback : value; };
  ViTOptions o;
  o.image_size = size;
  o.in_channels = channels;
  o.classes = classes;
  o.patch = c.patch;
  o.width = pick(c.width, defaults.width);
  o.blocks = pick(c.blocks, defaults.blocks);
  o.heads = pick(c.heads, defaults.heads);
  o.mlp_ratio = c.mlp_ratio;
  o.norms = parse_norm_sites(c.norm, c.group, c.norm_sites);
  o.act = c.act;
  o.drop_path = c.drop_path;
  validate(o);
  return o;
}

Config train_vit(const Config& record, const RunContext& ctx) {
  const VitConfig c = schema().read(record);
  const double smoothing = c.label_smoothing, clip = c.clip_grad, weight_decay = c.weight_decay;
  const auto started = std::chrono::steady_clock::now();

  const auto data = prepare_images(c.images, 1);
  const auto options = network_options(c, data.x_train.size(1), data.x_train.size(2), data.classes);
  torch::manual_seed(static_cast<uint64_t>(c.seed));
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
  hooks.epoch_seed = [seed = c.seed](int64_t epoch) { return epoch_seed(seed, epoch); };
  hooks.top5 = true;
  const ClassifierTraining training{c.epochs, c.batch_size, c.seed, c.amp == "bf16", c.schedule};
  const auto r = train_classifier(training, record, ctx, data, *net, [&](const torch::Tensor& x) { return net->forward(x); }, hooks);
  return Config{{"test_top1", r.test.top1}, {"test_top5", r.test.top5}, {"best_test_top1", r.best_top1},
                {"best_epoch", r.best_epoch}, {"train_acc", r.train.top1}, {"final_loss", r.final_loss},
                {"train_eval_loss", r.train.loss}, {"test_loss", r.test.loss}, {"epochs_done", r.epochs_done},
                {"diverged_at", r.diverged_at}, {"n_params", r.n_params}, {"width", options.width},
                {"blocks", options.blocks}, {"heads", options.heads}, {"seconds", r.seconds},
                {"images_per_s", r.images_per_s}};
}

}  // namespace pln::exp::vit
