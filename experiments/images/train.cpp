#include "images/train.h"

#include "common/atomic_file.h"
#include "common/csv.h"
#include "common/datasets.h"
#include "common/device.h"
#include "common/images.h"
#include "common/gnuplot.h"
#include "common/grid.h"
#include "common/progress.h"
#include "common/schedule.h"
#include "common/snapshot.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

namespace pln::exp::images {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Accuracy (and mean loss) of the network over a data set, in eval mode, batched.
// The data stay in host memory; each batch is copied to the network's device.
std::pair<double, double> evaluate(torch::nn::Sequential& net, const torch::Tensor& x, const torch::Tensor& y,
                                   int64_t batch, const torch::Device& device, bool amp) {
  torch::NoGradGuard no_grad;
  const AutocastBF16 autocast(amp);
  net->eval();
  int64_t correct = 0;
  double loss = 0;
  for (int64_t i = 0; i < x.size(0); i += batch) {
    const int64_t n = std::min(batch, x.size(0) - i);
    const auto labels = y.narrow(0, i, n).to(device);
    const auto logits = net->forward(x.narrow(0, i, n).to(device)).to(torch::kFloat);
    loss += torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum).item<double>();
    correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  net->train();
  return {double(correct) / double(std::max<int64_t>(1, x.size(0))), loss / double(std::max<int64_t>(1, x.size(0)))};
}

}  // namespace

Config image_defaults() {
  Config c = image_data_defaults();
  c.update(Config{{"augment", false}, {"norm", "pln"}, {"group", 8}, {"act", "none"}, {"axis", "channel"}, {"width", 16}, {"depth", 1},
          {"epochs", 10}, {"batch_size", 128}, {"optimizer", "sgd"}, {"lr", 0.05}, {"momentum", 0.9},
          {"weight_decay", 0.0}, {"schedule", "cosine"}, {"warmup", 0}, {"lr_floor", 0.0},
          {"step_size", 1000}, {"gamma", 0.1}, {"init_scale", 1.0}, {"bias_init", 0.0}, {"seed", 0},
          {"device", "cpu"}, {"amp", "none"}});
  return c;
}

Config train_classifier(const Config& c, const RunContext& ctx, const NetworkBuilder& build, int64_t min_size,
                        const std::string& experiment) {
  require_one_of(c, "optimizer", {"sgd", "adam"}, experiment);
  const int64_t epochs = get_int(c, "epochs"), batch = get_int(c, "batch_size");
  if (epochs < 1) throw std::invalid_argument(fmt::format("{}: epochs must be >= 1, got {}", experiment, epochs));
  if (batch < 1) throw std::invalid_argument(fmt::format("{}: batch_size must be >= 1, got {}", experiment, batch));
  const torch::Device device = ctx.device;
  const bool amp = config_amp_bf16(c, device, experiment);
  const auto start = Clock::now();

  const auto data = prepare_images(c, min_size, experiment);
  const auto &x_train = data.x_train, &y_train = data.y_train, &x_test = data.x_test, &y_test = data.y_test;

  torch::manual_seed(static_cast<uint64_t>(get_int(c, "seed")));
  auto net = build(c, x_train.size(1), x_train.size(2), data.classes);
  net->to(device);
  int64_t n_params = 0;
  for (const auto& p : net->parameters()) n_params += p.numel();
  fmt::print("data: {} ({} train, {} test images of {}x{}x{}, {} labels)\nnetwork ({} parameters):\n{}\n",
             data.name, x_train.size(0), x_test.size(0), x_train.size(1), x_train.size(2), x_train.size(3),
             get_string(c, "labels"), n_params, c10::str(*net));

  const int64_t n = x_train.size(0), steps_per_epoch = (n + batch - 1) / batch;
  const auto schedule = schedule_from_config(c, epochs * steps_per_epoch);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (get_string(c, "optimizer") == "sgd") {
    optimizer = std::make_unique<torch::optim::SGD>(
        net->parameters(), torch::optim::SGDOptions(schedule.lr).momentum(get_double(c, "momentum"))
                               .weight_decay(get_double(c, "weight_decay")));
  } else {
    optimizer = std::make_unique<torch::optim::Adam>(
        net->parameters(), torch::optim::AdamOptions(schedule.lr).weight_decay(get_double(c, "weight_decay")));
  }
  const bool augment_batches = get_bool(c, "augment");
  auto generator = at::detail::createCPUGenerator(static_cast<uint64_t>(get_int(c, "seed")) + 1);
  StepLog log(ctx.out / "epochs.csv", {"epoch", "train_loss", "train_acc", "test_acc", "lr", "seconds"}, 1);
  Progress progress(experiment, epochs * steps_per_epoch);
  DivergenceGuard guard(experiment);
  double train_seconds = 0, final_loss = NAN;
  int64_t step = 0, epochs_done = 0, images_seen = 0;
  net->train();
  for (int64_t epoch = 0; epoch < epochs && !guard.diverged(); ++epoch) {
    const auto t0 = Clock::now();
    const auto order = torch::randperm(n, generator, torch::kInt64);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t i = 0; i < n; i += batch, ++step) {
      const auto idx = order.narrow(0, i, std::min(batch, n - i));
      auto xb = x_train.index_select(0, idx);
      if (augment_batches) xb = augment(xb, 4, generator);
      xb = xb.to(device);
      const auto yb = y_train.index_select(0, idx).to(device);
      set_learning_rate(*optimizer, schedule.at(step));
      optimizer->zero_grad();
      torch::Tensor logits, loss;
      {
        const AutocastBF16 autocast(amp);
        logits = net->forward(xb);
        loss = torch::nn::functional::cross_entropy(logits, yb);
      }
      const double value = loss.item<double>();
      if (!guard.check(value, step, *net)) break;
      loss.backward();
      guard.keep(*net);
      optimizer->step();
      loss_sum += value * double(idx.size(0));
      correct += logits.argmax(1).eq(yb).sum().item<int64_t>();
      seen += idx.size(0);
      progress.update(step + 1, fmt::format("epoch {} loss {:.3f}", epoch + 1, value));
    }
    train_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    images_seen += seen;
    if (seen == 0) break;
    final_loss = loss_sum / double(seen);
    epochs_done = epoch + 1;
    const auto [test_acc, test_loss] = evaluate(net, x_test, y_test, 512, device, amp);
    (void)test_loss;
    log.add({double(epoch + 1), final_loss, double(correct) / double(seen), test_acc,
             schedule.at(std::max<int64_t>(0, step - 1)), train_seconds});
  }
  progress.finish();
  const auto [train_acc, train_eval_loss] = evaluate(net, x_train, y_train, 512, device, amp);
  const auto [test_acc, test_loss] = evaluate(net, x_test, y_test, 512, device, amp);
  return {{"train_acc", train_acc}, {"test_acc", test_acc}, {"final_loss", std::isfinite(final_loss) ? final_loss : train_eval_loss},
          {"train_eval_loss", train_eval_loss}, {"test_loss", test_loss}, {"epochs_done", epochs_done},
          {"diverged_at", guard.diverged_at()}, {"n_params", n_params},
          {"seconds", std::chrono::duration<double>(Clock::now() - start).count()},
          {"images_per_s", train_seconds > 0 ? double(images_seen) / train_seconds : 0.0}};
}

}  // namespace pln::exp::images
