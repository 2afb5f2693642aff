#include "vit/train.h"

#include "common/csv.h"
#include "common/datasets.h"
#include "common/device.h"
#include "common/progress.h"
#include "common/schedule.h"
#include "common/snapshot.h"
#include "common/images.h"
#include "vit/checkpoint.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace pln::exp::vit {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kEpochColumns = {"epoch", "train_loss", "train_acc", "test_top1", "test_top5",
                                                "lr", "seconds"};

struct Accuracy {
  double top1 = 0, top5 = 0, loss = 0;
};

// The data stay in host memory; each batch is copied to the network's device.
Accuracy evaluate(VisionTransformer& net, const torch::Tensor& x, const torch::Tensor& y, int64_t batch,
                  const torch::Device& device, bool amp) {
  torch::NoGradGuard no_grad;
  const AutocastBF16 autocast(amp);
  net->eval();
  double loss = 0;
  int64_t top1 = 0, top5 = 0;
  for (int64_t i = 0; i < x.size(0); i += batch) {
    const int64_t n = std::min(batch, x.size(0) - i);
    const auto logits = net->forward(x.narrow(0, i, n).to(device)).to(torch::kFloat);
    const auto labels = y.narrow(0, i, n).to(device);
    loss += torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum).item<double>();
    const auto best = std::get<1>(logits.topk(std::min<int64_t>(5, logits.size(1)), 1));
    const auto hits = best.eq(labels.unsqueeze(1));
    top1 += hits.select(1, 0).sum().item<int64_t>();
    top5 += hits.any(1).sum().item<int64_t>();
  }
  net->train();
  const double count = double(std::max<int64_t>(1, x.size(0)));
  return {double(top1) / count, double(top5) / count, loss / count};
}

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
                  {"weight_decay", 0.05}, {"warmup", 1.0}, {"lr_floor", 0.0}, {"label_smoothing", 0.0},
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

std::optional<Config> train_vit(const Config& c, const RunContext& ctx, const TrainControl& control) {
  const auto start = Clock::now();
  const torch::Device device = ctx.device;
  const bool amp = config_amp_bf16(c, device, "vit");
  const int64_t epochs = get_int(c, "epochs"), batch = get_int(c, "batch_size");
  if (epochs < 1) throw std::invalid_argument(fmt::format("vit: epochs must be >= 1, got {}", epochs));
  if (batch < 1) throw std::invalid_argument(fmt::format("vit: batch_size must be >= 1, got {}", batch));
  const double smoothing = get_double(c, "label_smoothing"), clip = get_double(c, "clip_grad");
  const double warmup_epochs = get_double(c, "warmup"), weight_decay = get_double(c, "weight_decay");
  if (!(smoothing >= 0.0 && smoothing < 1.0)) {
    throw std::invalid_argument(fmt::format("vit: label_smoothing must be in [0, 1), got {}", smoothing));
  }
  if (!(clip >= 0.0)) throw std::invalid_argument(fmt::format("vit: clip_grad must be >= 0 (0: off), got {}", clip));
  if (!(warmup_epochs >= 0.0)) throw std::invalid_argument(fmt::format("vit: warmup must be >= 0 epochs, got {}", warmup_epochs));
  if (!(weight_decay >= 0.0)) throw std::invalid_argument(fmt::format("vit: weight_decay must be >= 0, got {}", weight_decay));
  // Check the network's options before the data loads: a bad key fails at once.
  (void)options_from_config(c, 1, std::max<int64_t>(1, get_int(c, "patch")), 10);

  const auto data = prepare_images(c, 1, "vit");
  const auto &x_train = data.x_train, &y_train = data.y_train, &x_test = data.x_test, &y_test = data.y_test;
  const auto options = options_from_config(c, x_train.size(1), x_train.size(2), data.classes);
  torch::manual_seed(static_cast<uint64_t>(get_int(c, "seed")));
  VisionTransformer net(options);
  net->to(device);
  int64_t n_params = 0;
  for (const auto& p : net->parameters()) n_params += p.numel();
  fmt::print("data: {} ({} train, {} test images of {}x{}x{}, {} labels)\nnetwork ({} parameters):\n{}\n",
             data.name, x_train.size(0), x_test.size(0), x_train.size(1), x_train.size(2), x_train.size(3),
             get_string(c, "labels"), n_params, c10::str(*net));

  const int64_t n = x_train.size(0), steps_per_epoch = (n + batch - 1) / batch, total = epochs * steps_per_epoch;
  Schedule schedule;
  schedule.kind = "cosine";
  schedule.lr = get_double(c, "lr");
  schedule.total = total;
  schedule.warmup = std::min(total, static_cast<int64_t>(std::llround(warmup_epochs * double(steps_per_epoch))));
  schedule.floor = get_double(c, "lr_floor");
  schedule.validate();
  torch::optim::AdamW optimizer(parameter_groups(net, weight_decay));

  const auto checkpoint = ctx.out / "checkpoint.pt";
  TrainingState state;
  if (control.resume && fs::exists(checkpoint)) {
    load_checkpoint(checkpoint, c, *net, optimizer, state, device);
    fmt::print("resumed from {} after epoch {} of {}\n", checkpoint.string(), state.epochs_done, epochs);
  } else {
    if (control.resume) fmt::print("no checkpoint in {}; starting from the beginning\n", ctx.out.string());
    fs::remove(checkpoint);  // another configuration's checkpoint must not be resumed later
  }
  StepLog log(ctx.out / "epochs.csv", kEpochColumns, 1);
  for (const auto& row : state.records) log.add(row);

  const bool augment_batches = get_bool(c, "augment");
  const auto loss_options = torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing);
  Progress progress("vit", total);
  DivergenceGuard guard("vit");
  const double elapsed_before = state.elapsed_seconds;
  int64_t epochs_this_session = 0;
  double final_loss = state.records.empty() ? NAN : state.records.back()[1];
  net->train();
  for (int64_t epoch = state.epochs_done; epoch < epochs && !guard.diverged(); ++epoch) {
    if (control.stop_after_epochs > 0 && epochs_this_session == control.stop_after_epochs) {
      progress.finish("stopped");
      return std::nullopt;
    }
    const auto t0 = Clock::now();
    const uint64_t seed = epoch_seed(get_int(c, "seed"), epoch);
    torch::manual_seed(seed);  // stochastic depth
    auto generator = at::detail::createCPUGenerator(seed);
    const auto order = torch::randperm(n, generator, torch::kInt64);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t i = 0; i < n; i += batch, ++state.step) {
      const auto idx = order.narrow(0, i, std::min(batch, n - i));
      auto xb = x_train.index_select(0, idx);
      if (augment_batches) xb = augment(xb, 4, generator);
      xb = xb.to(device);
      const auto yb = y_train.index_select(0, idx).to(device);
      set_learning_rate(optimizer, schedule.at(state.step));
      optimizer.zero_grad();
      torch::Tensor logits, loss;
      {
        const AutocastBF16 autocast(amp);
        logits = net->forward(xb);
        loss = torch::nn::functional::cross_entropy(logits, yb, loss_options);
      }
      const double value = loss.item<double>();
      if (!guard.check(value, state.step, *net)) break;
      loss.backward();
      if (clip > 0) torch::nn::utils::clip_grad_norm_(net->parameters(), clip);
      guard.keep(*net);
      optimizer.step();
      loss_sum += value * double(idx.size(0));
      correct += logits.argmax(1).eq(yb).sum().item<int64_t>();
      seen += idx.size(0);
      progress.update(state.step + 1, fmt::format("epoch {} loss {:.3f}", epoch + 1, value));
    }
    state.train_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    state.images_seen += seen;
    if (seen == 0) break;
    final_loss = loss_sum / double(seen);
    const auto test = evaluate(net, x_test, y_test, 512, device, amp);
    if (test.top1 > state.best_top1 || state.epochs_done == 0) state.best_top1 = test.top1, state.best_epoch = epoch + 1;
    state.epochs_done = epoch + 1;
    state.records.push_back({double(epoch + 1), final_loss, double(correct) / double(seen), test.top1, test.top5,
                             schedule.at(std::max<int64_t>(0, state.step - 1)), state.train_seconds});
    log.add(state.records.back());
    state.elapsed_seconds = elapsed_before + std::chrono::duration<double>(Clock::now() - start).count();
    if (!guard.diverged()) save_checkpoint(checkpoint, c, *net, optimizer, state);
    ++epochs_this_session;
  }
  progress.finish();
  const auto train = evaluate(net, x_train, y_train, 512, device, amp);
  const auto test = evaluate(net, x_test, y_test, 512, device, amp);
  return Config{{"test_top1", test.top1}, {"test_top5", test.top5}, {"best_test_top1", state.best_top1},
                {"best_epoch", state.best_epoch}, {"train_acc", train.top1},
                {"final_loss", std::isfinite(final_loss) ? final_loss : train.loss}, {"train_eval_loss", train.loss},
                {"test_loss", test.loss}, {"epochs_done", state.epochs_done}, {"diverged_at", guard.diverged_at()},
                {"n_params", n_params}, {"width", options.width}, {"blocks", options.blocks},
                {"heads", options.heads},
                {"seconds", elapsed_before + std::chrono::duration<double>(Clock::now() - start).count()},
                {"images_per_s", state.train_seconds > 0 ? double(state.images_seen) / state.train_seconds : 0.0}};
}

}  // namespace pln::exp::vit
