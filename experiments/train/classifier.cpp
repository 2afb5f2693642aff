#include "train/classifier.h"

#include "records/csv.h"
#include "records/step_log.h"
#include "run/checkpoint.h"
#include "run/device.h"
#include "run/progress.h"
#include "train/datasets.h"
#include "train/transforms.h"
#include "train/divergence_guard.h"
#include "train/schedule.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

namespace pln::exp {

namespace {

using Clock = std::chrono::steady_clock;
using Forward = std::function<torch::Tensor(const torch::Tensor&)>;

constexpr int64_t kEvalBatch = 512;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// In eval mode, batched; the data stay in host memory and each batch is copied to the device.
Accuracy evaluate(torch::nn::Module& network, const Forward& forward, const torch::Tensor& x,
                  const torch::Tensor& y, const torch::Device& device, bool amp) {
  torch::NoGradGuard no_grad;
  const AutocastBF16 autocast(amp);
  network.eval();
  double loss = 0;
  int64_t top1 = 0, top5 = 0;
  for (int64_t i = 0; i < x.size(0); i += kEvalBatch) {
    const int64_t n = std::min(kEvalBatch, x.size(0) - i);
    const auto logits = forward(x.narrow(0, i, n).to(device)).to(torch::kFloat);
    const auto labels = y.narrow(0, i, n).to(device);
    loss += torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum).item<double>();
    top1 += logits.argmax(1).eq(labels).sum().item<int64_t>();
    const auto best = std::get<1>(logits.topk(std::min<int64_t>(5, logits.size(1)), 1));
    top5 += best.eq(labels.unsqueeze(1)).any(1).sum().item<int64_t>();
  }
  network.train();
  const double count = double(std::max<int64_t>(1, x.size(0)));
  return {double(top1) / count, double(top5) / count, loss / count};
}

std::vector<std::string> epoch_columns(bool top5) {
  if (top5) return {"epoch", "train_loss", "train_acc", "test_top1", "test_top5", "lr", "seconds"};
  return {"epoch", "train_loss", "train_acc", "test_acc", "lr", "seconds"};
}

}  // namespace

ClassifierResult train_classifier(const ClassifierTraining& t, const Config& c, const RunContext& ctx,
                                  const PreparedImages& data, torch::nn::Module& network, const Forward& forward,
                                  const ClassifierHooks& hooks) {
  const auto start = hooks.started;
  const torch::Device device = ctx.device;
  const bool amp = t.amp;  // on CUDA: the schema checked it
  const int64_t epochs = t.epochs, batch = t.batch_size, seed = t.seed;
  const bool augment_batches = data.augment;
  const auto &x_train = data.x_train, &y_train = data.y_train, &x_test = data.x_test, &y_test = data.y_test;

  ClassifierResult result;
  for (const auto& p : network.parameters()) result.n_params += p.numel();
  fmt::print("data: {} ({} train, {} test images of {}x{}x{}, {} labels)\nnetwork ({} parameters):\n{}\n",
             data.name, x_train.size(0), x_test.size(0), x_train.size(1), x_train.size(2), x_train.size(3),
             data.labels, result.n_params, c10::str(network));

  const int64_t n = x_train.size(0), steps_per_epoch = (n + batch - 1) / batch, total = epochs * steps_per_epoch;
  const auto schedule = t.schedule.over(total);
  const auto optimizer = hooks.optimizer(network, schedule.lr);
  auto generator = at::detail::createCPUGenerator(static_cast<uint64_t>(seed) + 1);

  DivergenceGuard guard(hooks.experiment);
  const std::vector<std::string> columns = epoch_columns(hooks.top5);
  const StateLayout layout{total, epochs, epochs * n, {{"epochs.csv", {columns}}},
                           {{"best_top1", {{StateField::kNumber}}}, {"best_epoch", {{StateField::kEpoch}}}}};
  Checkpointer checkpoints(ctx, c, network, *optimizer, guard, layout, hooks.epoch_seed ? nullptr : &generator);
  TrainingState state;
  const bool resumed = checkpoints.resume(state);
  // The log is opened (and epochs.csv rewritten) only once the checkpoint is accepted.
  StepLog log(ctx.out / "epochs.csv", columns, 1);
  if (resumed) log.restore(state.logs.at("epochs.csv"));
  result.best_top1 = state.values.value("best_top1", 0.0);
  result.best_epoch = state.values.value("best_epoch", int64_t{0});
  result.final_loss = log.table().rows.empty() ? NAN : number_value(log.table().rows.back()[1]);

  Progress progress(hooks.experiment, total);
  const double elapsed_before = state.elapsed_seconds;
  network.train();
  for (int64_t epoch = state.epochs_done; epoch < epochs && !guard.diverged(); ++epoch) {
    const auto t0 = Clock::now();
    if (hooks.epoch_seed) {
      const uint64_t epoch_seed = hooks.epoch_seed(epoch);
      torch::manual_seed(epoch_seed);
      generator = at::detail::createCPUGenerator(epoch_seed);
    }
    const auto order = torch::randperm(n, generator, torch::kInt64);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t i = 0; i < n; i += batch, ++state.step) {
      const auto idx = order.narrow(0, i, std::min(batch, n - i));
      auto xb = x_train.index_select(0, idx);
      if (augment_batches) xb = augment(xb, 4, generator);
      xb = xb.to(device);
      const auto yb = y_train.index_select(0, idx).to(device);
      set_learning_rate(*optimizer, schedule.at(state.step));
      optimizer->zero_grad();
      torch::Tensor logits, loss;
      {
        const AutocastBF16 autocast(amp);
        logits = forward(xb);
        loss = torch::nn::functional::cross_entropy(logits, yb, hooks.loss);
      }
      const double value = loss.item<double>();
      if (!guard.check(value, state.step, network)) break;
      loss.backward();
      if (hooks.clip_grad > 0) torch::nn::utils::clip_grad_norm_(network.parameters(), hooks.clip_grad);
      guard.keep(network);
      optimizer->step();
      loss_sum += value * double(idx.size(0));
      correct += logits.argmax(1).eq(yb).sum().item<int64_t>();
      seen += idx.size(0);
      progress.update(state.step + 1, fmt::format("epoch {} loss {:.3f}", epoch + 1, value));
    }
    state.train_seconds += since(t0);
    state.images_seen += seen;
    if (seen == 0) break;
    result.final_loss = loss_sum / double(seen);
    const auto test = evaluate(network, forward, x_test, y_test, device, amp);
    if (test.top1 > result.best_top1 || state.epochs_done == 0) result.best_top1 = test.top1, result.best_epoch = epoch + 1;
    state.epochs_done = epoch + 1;
    const double lr = schedule.at(std::max<int64_t>(0, state.step - 1)), train_acc = double(correct) / double(seen);
    if (hooks.top5) {
      log.add({double(epoch + 1), result.final_loss, train_acc, test.top1, test.top5, lr, state.train_seconds});
    } else {
      log.add({double(epoch + 1), result.final_loss, train_acc, test.top1, lr, state.train_seconds});
    }
    state.elapsed_seconds = elapsed_before + since(start);
    state.values = {{"best_top1", result.best_top1}, {"best_epoch", result.best_epoch}};
    state.logs["epochs.csv"] = log.table();
    if (!guard.diverged()) checkpoints.save(state);
  }
  progress.finish();
  result.train = evaluate(network, forward, x_train, y_train, device, amp);
  result.test = evaluate(network, forward, x_test, y_test, device, amp);
  if (!std::isfinite(result.final_loss)) result.final_loss = result.train.loss;
  result.epochs_done = state.epochs_done;
  result.diverged_at = guard.diverged_at();
  result.seconds = elapsed_before + since(start);
  result.images_per_s = state.train_seconds > 0 ? double(state.images_seen) / state.train_seconds : 0.0;
  return result;
}

}  // namespace pln::exp
