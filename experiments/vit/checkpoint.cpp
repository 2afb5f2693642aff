#include "vit/checkpoint.h"

#include "common/atomic_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pln::exp::vit {

namespace {

// Every key whose value differs between two configurations, as "key: a -> b".
// The keys whose change makes a checkpoint another run's; the device is not
// one of them (a checkpoint resumes on any device).
std::vector<std::string> differences(const Config& saved, const Config& now) {
  std::vector<std::string> out;
  for (const auto& item : now.items()) {
    if (item.key() == "device") continue;
    const auto it = saved.find(item.key());
    if (it == saved.end()) {
      out.push_back(fmt::format("{}: (absent) -> {}", item.key(), value_text(item.value())));
    } else if (*it != item.value()) {
      out.push_back(fmt::format("{}: {} -> {}", item.key(), value_text(*it), value_text(item.value())));
    }
  }
  for (const auto& item : saved.items()) {
    if (!now.contains(item.key()) && item.key() != "device") out.push_back(fmt::format("{}: {} -> (absent)", item.key(), value_text(item.value())));
  }
  return out;
}

torch::Tensor records_tensor(const std::vector<std::vector<double>>& rows) {
  const int64_t cols = rows.empty() ? 0 : static_cast<int64_t>(rows.front().size());
  auto t = torch::empty({static_cast<int64_t>(rows.size()), cols}, torch::kFloat64);
  auto a = t.accessor<double, 2>();
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t c = 0; c < cols; ++c) a[static_cast<int64_t>(r)][c] = rows[r].at(static_cast<size_t>(c));
  }
  return t;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, const TrainingState& state) {
  torch::serialize::OutputArchive archive, model, optim;
  network.save(model);
  optimizer.save(optim);
  archive.write("model", model);
  archive.write("optimizer", optim);
  archive.write("config", c10::IValue(config.dump()));
  archive.write("counters", torch::tensor({state.epochs_done, state.step, state.images_seen, state.best_epoch}, torch::kInt64));
  archive.write("seconds", torch::tensor({state.train_seconds, state.elapsed_seconds, state.best_top1}, torch::kFloat64));
  archive.write("records", records_tensor(state.records));
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(file, bytes.str());
}

void load_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, TrainingState& state, const torch::Device& device) {
  torch::serialize::InputArchive archive, model, optim;
  c10::IValue saved_config;
  torch::Tensor counters, seconds, records;
  try {
    archive.load_from(file.string(), device);
    archive.read("config", saved_config);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint {} is unreadable or corrupt: {}", file.string(),
                                         e.what_without_backtrace()));
  }
  Config saved;
  try {
    saved = Config::parse(saved_config.toStringRef());
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("checkpoint {} holds no readable configuration: {}", file.string(), e.what()));
  }
  if (const auto diff = differences(saved, config); !diff.empty()) {
    throw std::runtime_error(fmt::format(
        "checkpoint {} was written with another configuration ({}); run without --resume to start again",
        file.string(), fmt::join(diff, "; ")));
  }
  try {
    archive.read("model", model);
    network.load(model);
    archive.read("optimizer", optim);
    optimizer.load(optim);
    archive.read("counters", counters);
    archive.read("seconds", seconds);
    archive.read("records", records);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint {} does not match this network or is corrupt: {}",
                                         file.string(), e.what_without_backtrace()));
  }
  if (counters.numel() != 4 || seconds.numel() != 3 || records.dim() != 2) {
    throw std::runtime_error(fmt::format("checkpoint {} is corrupt: unexpected counter shapes", file.string()));
  }
  counters = counters.cpu(), seconds = seconds.cpu(), records = records.cpu();
  state.epochs_done = counters[0].item<int64_t>();
  state.step = counters[1].item<int64_t>();
  state.images_seen = counters[2].item<int64_t>();
  state.best_epoch = counters[3].item<int64_t>();
  state.train_seconds = seconds[0].item<double>();
  state.elapsed_seconds = seconds[1].item<double>();
  state.best_top1 = seconds[2].item<double>();
  state.records.clear();
  const auto r = records.accessor<double, 2>();
  for (int64_t i = 0; i < records.size(0); ++i) {
    state.records.emplace_back();
    for (int64_t c = 0; c < records.size(1); ++c) state.records.back().push_back(r[i][c]);
  }
}

}  // namespace pln::exp::vit
