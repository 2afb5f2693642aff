#include "run/checkpoint.h"

#include "system/atomic_file.h"
#include "records/json.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace pln::exp {

namespace {

// Every key whose value differs between two configurations, as "key: a -> b":
// the keys whose change makes a checkpoint another run's. Neither the device
// (a checkpoint resumes on any) nor how often checkpoints are written is.
bool exempt(const std::string& key) { return key == "device" || key == "checkpoint_every"; }

std::vector<std::string> differences(const Config& saved, const Config& now) {
  std::vector<std::string> out;
  for (const auto& item : now.items()) {
    if (exempt(item.key())) continue;
    const auto it = saved.find(item.key());
    if (it == saved.end()) {
      out.push_back(fmt::format("{}: (absent) -> {}", item.key(), value_text(item.value())));
    } else if (*it != item.value()) {
      out.push_back(fmt::format("{}: {} -> {}", item.key(), value_text(*it), value_text(item.value())));
    }
  }
  for (const auto& item : saved.items()) {
    if (!now.contains(item.key()) && !exempt(item.key())) out.push_back(fmt::format("{}: {} -> (absent)", item.key(), value_text(item.value())));
  }
  return out;
}

// The counters, the loop's values and the logs, as one JSON document; the
// logs as CSV text, whose numbers round-trip exactly and whose NaN is "".
std::string state_document(const TrainingState& state) {
  Config logs = Config::object();
  for (const auto& [name, table] : state.logs) logs[name] = to_csv(table);
  return Config{{"step", state.step}, {"epochs_done", state.epochs_done}, {"images_seen", state.images_seen},
                {"train_seconds", state.train_seconds}, {"elapsed_seconds", state.elapsed_seconds},
                {"values", state.values}, {"logs", logs}}
      .dump();
}

TrainingState parse_state(const std::string& text, const std::filesystem::path& file) {
  const auto doc = parse_json_text(text, file.string() + ": training state");
  TrainingState state;
  state.step = doc.at("step").get<int64_t>();
  state.epochs_done = doc.at("epochs_done").get<int64_t>();
  state.images_seen = doc.at("images_seen").get<int64_t>();
  state.train_seconds = doc.at("train_seconds").get<double>();
  state.elapsed_seconds = doc.at("elapsed_seconds").get<double>();
  state.values = doc.at("values");
  for (const auto& item : doc.at("logs").items()) {
    state.logs[item.key()] = parse_csv(item.value().get<std::string>(), file.string() + ":" + item.key());
  }
  return state;
}

// Little-endian integers of a zip archive's records.
uint64_t little_endian(const std::string& bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(bytes.at(at + i));
  return value;
}

// An entry's uncompressed size from its zip64 extra field (id 1, the size
// first), for an entry whose 32-bit field says 0xffffffff; "unbounded" when
// the field is missing.
uint64_t zip64_size(const std::string& bytes, size_t extra, uint64_t length) {
  for (size_t at = extra; at + 4 <= extra + length && at + 4 <= bytes.size();) {
    const auto id = little_endian(bytes, at, 2), size = little_endian(bytes, at + 2, 2);
    if (id == 1 && size >= 8 && at + 12 <= bytes.size()) return little_endian(bytes, at + 4, 8);
    at += 4 + size;
  }
  return std::numeric_limits<uint64_t>::max() / 2;
}

// A checkpoint is a zip archive: LibTorch stores its tensors and pickles and
// deflates only its TorchScript code, a few KiB. A deflated entry could
// inflate to any size while it loads (a 4 MB file's data.pkl to 4 GiB), and
// the loader allocates what the zip directory declares, so the declared sizes
// of the deflated entries are bounded before LibTorch reads one; a stored
// entry holds only bytes the file has.
constexpr uint64_t kMaxInflatedBytes = uint64_t{64} << 20;

void check_inflated_sizes(const std::filesystem::path& file) {
  auto corrupt = [&](const std::string& why) {
    return std::runtime_error(fmt::format("checkpoint {} is unreadable or corrupt: {}", file.string(), why));
  };
  if (!std::filesystem::is_regular_file(file)) throw corrupt("not a regular file");
  const std::string bytes = read_text(file);
  // The end-of-central-directory record: 22 bytes and a comment of up to 64 KiB.
  constexpr size_t kEnd = 22;
  if (bytes.size() < kEnd) throw corrupt("too short for a zip archive");
  size_t end = std::string::npos;
  for (size_t at = bytes.size() - kEnd + 1; at-- > 0 && bytes.size() - at <= kEnd + 0xffff;) {
    if (little_endian(bytes, at, 4) == 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end == std::string::npos) throw corrupt("no zip directory");
  uint64_t entries = little_endian(bytes, end + 10, 2), offset = little_endian(bytes, end + 16, 4);
  if (entries == 0xffff || offset == 0xffffffff) {
    // Zip64: a locator just before the record points at the 64-bit record.
    if (end < 20 || little_endian(bytes, end - 20, 4) != 0x07064b50) throw corrupt("no zip64 directory locator");
    const uint64_t record = little_endian(bytes, end - 20 + 8, 8);
    if (record + 56 > bytes.size() || little_endian(bytes, record, 4) != 0x06064b50) {
      throw corrupt("no zip64 directory");
    }
    entries = little_endian(bytes, record + 32, 8);
    offset = little_endian(bytes, record + 48, 8);
  }
  size_t at = offset;
  uint64_t inflated = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    if (at + 46 > bytes.size() || little_endian(bytes, at, 4) != 0x02014b50) throw corrupt("a broken zip directory");
    const auto method = little_endian(bytes, at + 10, 2), size = little_endian(bytes, at + 24, 4);
    const auto name_length = little_endian(bytes, at + 28, 2);
    if (method != 0) {
      const auto extra_length = little_endian(bytes, at + 30, 2);
      inflated += size != 0xffffffff ? size : zip64_size(bytes, at + 46 + name_length, extra_length);
      if (inflated > kMaxInflatedBytes) {
        throw corrupt(fmt::format("its compressed entries would inflate to more than {} MiB (the last, {}); "
                                  "LibTorch compresses only a few KiB of code",
                                  kMaxInflatedBytes >> 20,
                                  at + 46 + name_length <= bytes.size() ? bytes.substr(at + 46, name_length) : "?"));
      }
    }
    at += 46 + name_length + little_endian(bytes, at + 30, 2) + little_endian(bytes, at + 32, 2);
  }
}

// Writes `file` atomically.
void save_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, const TrainingState& state,
                     const ParameterSnapshot& last_finite, const at::Generator* generator) {
  torch::serialize::OutputArchive archive, model, optim;
  network.save(model);
  optimizer.save(optim);
  archive.write("model", model);
  archive.write("optimizer", optim);
  archive.write("config", c10::IValue(config.dump()));
  archive.write("state", c10::IValue(state_document(state)));
  {
    auto default_generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(default_generator.mutex());
    archive.write("default_generator", default_generator.get_state());
  }
  if (generator) archive.write("generator", generator->get_state());
  torch::serialize::OutputArchive kept;
  for (size_t i = 0; i < last_finite.copies().size(); ++i) kept.write(std::to_string(i), last_finite.copies()[i]);
  archive.write("last_finite", kept);
  archive.write("last_finite_count", torch::tensor(static_cast<int64_t>(last_finite.copies().size())));
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(file, bytes.str());
}

// Loads `file` into the network, the optimiser, the guard, the generators and `state`.
void load_checkpoint(const std::filesystem::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, TrainingState& state, ParameterSnapshot& last_finite,
                     const torch::Device& device, at::Generator* generator) {
  torch::serialize::InputArchive archive, model, optim, kept;
  c10::IValue saved_config, saved_state;
  torch::Tensor default_generator_state, generator_state;
  check_inflated_sizes(file);
  try {
    archive.load_from(file.string(), device);
    archive.read("config", saved_config);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint {} is unreadable or corrupt: {}", file.string(),
                                         e.what_without_backtrace()));
  }
  Config saved;
  try {
    saved = parse_json_text(saved_config.toStringRef(), file.string() + ": configuration");
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
    archive.read("state", saved_state);
    archive.read("default_generator", default_generator_state);
    if (generator) archive.read("generator", generator_state);
    torch::Tensor count;
    archive.read("last_finite_count", count);
    archive.read("last_finite", kept);
    std::vector<torch::Tensor> copies(static_cast<size_t>(count.item<int64_t>()));
    for (size_t i = 0; i < copies.size(); ++i) kept.read(std::to_string(i), copies[i]);
    last_finite.set_copies(std::move(copies));
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint {} does not match this network or is corrupt: {}",
                                         file.string(), e.what_without_backtrace()));
  }
  try {
    state = parse_state(saved_state.toStringRef(), file);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("checkpoint {} is corrupt: its training state is unreadable: {}",
                                         file.string(), e.what()));
  }
  try {
    auto default_generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(default_generator.mutex());
    default_generator.set_state(default_generator_state.cpu());
    if (generator) generator->set_state(generator_state.cpu());
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint {} is corrupt: a generator state does not load: {}",
                                         file.string(), e.what_without_backtrace()));
  }
}

}  // namespace

Checkpointer::Checkpointer(const RunContext& context, const Config& config, torch::nn::Module& network,
                           torch::optim::Optimizer& optimizer, DivergenceGuard& guard, at::Generator* generator)
    : context_(context), config_(config), network_(network), optimizer_(optimizer), guard_(guard),
      generator_(generator) {}

bool Checkpointer::resume(TrainingState& state) {
  const auto file = context_.out / "checkpoint.pt";
  if (context_.resume && std::filesystem::exists(file)) {
    load_checkpoint(file, config_, network_, optimizer_, state, guard_.last_finite(), context_.device, generator_);
    fmt::print("resumed from {} after step {}{}\n", file.string(), state.step,
               state.epochs_done > 0 ? fmt::format(", epoch {}", state.epochs_done) : std::string());
    return true;
  }
  if (context_.resume) fmt::print("no checkpoint in {}; starting from the beginning\n", context_.out.string());
  std::filesystem::remove(file);
  return false;
}

void Checkpointer::save(const TrainingState& state) {
  save_checkpoint(context_.out / "checkpoint.pt", config_, network_, optimizer_, state, guard_.last_finite(),
                  generator_);
  if (++written_ == context_.stop_after_checkpoints) {
    throw SessionStopped(fmt::format("stopped after {} checkpoint(s), at step {}", written_, state.step));
  }
}

}  // namespace pln::exp
