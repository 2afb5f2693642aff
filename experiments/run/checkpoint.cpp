#include "run/checkpoint.h"

#include "records/json.h"
#include "records/safetensors.h"
#include "system/atomic_file.h"
#include "system/printable.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

// The checkpoint's name, and that of the format earlier versions wrote
// (LibTorch's zip of pickles), which is never loaded: unpickling a file from
// a run directory anyone may have handed over runs whatever it says.
constexpr const char* kCheckpointName = "checkpoint.safetensors";
constexpr const char* kPickledCheckpointName = "checkpoint.pt";
// __metadata__'s "format": what the rest of the metadata means.
constexpr const char* kFormat = "pln-checkpoint-1";

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

// ----------------------------------------------------------- tensors ---

std::string dtype_name(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat64: return "F64";
    case torch::kFloat32: return "F32";
    case torch::kFloat16: return "F16";
    case torch::kBFloat16: return "BF16";
    case torch::kInt64: return "I64";
    case torch::kInt32: return "I32";
    case torch::kInt16: return "I16";
    case torch::kInt8: return "I8";
    case torch::kUInt8: return "U8";
    case torch::kBool: return "BOOL";
    default: throw std::logic_error(std::string("checkpoint: no safetensors dtype for ") + c10::toString(t.scalar_type()));
  }
}

ExpectedTensor expected_like(const torch::Tensor& t) { return {dtype_name(t), t.sizes().vec()}; }

// The optimisers' state is keyed by each parameter's TensorImpl: as text in
// LibTorch 1.13, as the pointer itself in 2.x.
template <typename State>
typename State::key_type state_key(const State&, const torch::Tensor& parameter) {
  using Key = typename State::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(parameter.unsafeGetTensorImpl());
  }
}

// What one optimiser keeps per parameter: the names of its tensors, and
// whether it counts steps. Adam and AdamW keep the moments (and, with
// amsgrad, their maximum) and a step count; SGD with momentum its buffer.
struct OptimizerKind {
  std::string name;
  std::vector<std::string> tensors;
  bool counts_steps = false;
};

// One parameter's optimiser state: its named tensors and its step count.
struct ParameterState {
  std::map<std::string, torch::Tensor> tensors;
  int64_t step = 0;
};

// Adam and AdamW keep the same state under two names (LibTorch declares each
// twice): these read and build either.
template <typename Options>
OptimizerKind adam_kind(const std::string& name, const torch::optim::Optimizer& optimizer) {
  OptimizerKind kind{name, {"exp_avg", "exp_avg_sq"}, true};
  const auto& groups = optimizer.param_groups();
  if (std::any_of(groups.begin(), groups.end(),
                  [](const auto& group) { return static_cast<const Options&>(group.options()).amsgrad(); })) {
    kind.tensors.push_back("max_exp_avg_sq");
  }
  return kind;
}

template <typename AdamState>
ParameterState adam_state_of(const AdamState& state) {
  return {{{"exp_avg", state.exp_avg()}, {"exp_avg_sq", state.exp_avg_sq()}, {"max_exp_avg_sq", state.max_exp_avg_sq()}},
          state.step()};
}

template <typename AdamState>
std::unique_ptr<torch::optim::OptimizerParamState> make_adam_state(const ParameterState& saved) {
  auto state = std::make_unique<AdamState>();
  state->step(saved.step);
  state->exp_avg(saved.tensors.at("exp_avg"));
  state->exp_avg_sq(saved.tensors.at("exp_avg_sq"));
  if (const auto it = saved.tensors.find("max_exp_avg_sq"); it != saved.tensors.end()) state->max_exp_avg_sq(it->second);
  return state;
}

OptimizerKind optimizer_kind(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return adam_kind<torch::optim::AdamOptions>("adam", optimizer);
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) {
    return adam_kind<torch::optim::AdamWOptions>("adamw", optimizer);
  }
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return {"sgd", {"momentum_buffer"}, false};
  throw std::logic_error("checkpoint: an optimiser other than Adam, AdamW or SGD");
}

// One parameter's optimiser state, its undefined tensors left out.
ParameterState parameter_state(const torch::optim::OptimizerParamState& state) {
  ParameterState out;
  if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(&state)) out = adam_state_of(*adam);
  else if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&state)) out = adam_state_of(*adamw);
  else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(&state)) {
    out.tensors = {{"momentum_buffer", sgd->momentum_buffer()}};
  }
  for (auto it = out.tensors.begin(); it != out.tensors.end();) {
    it = it->second.defined() ? std::next(it) : out.tensors.erase(it);
  }
  return out;
}

std::unique_ptr<torch::optim::OptimizerParamState> make_state(const std::string& kind, const ParameterState& saved) {
  if (kind == "adam") return make_adam_state<torch::optim::AdamParamState>(saved);
  if (kind == "adamw") return make_adam_state<torch::optim::AdamWParamState>(saved);
  auto state = std::make_unique<torch::optim::SGDParamState>();
  state->momentum_buffer(saved.tensors.at("momentum_buffer"));
  return state;
}

// ------------------------------------------------------ what is saved ---

// Everything a checkpoint holds, by name: the network's parameters and
// buffers ("model.NAME", the names of its state_dict), each parameter's
// optimiser state ("optimizer.NAME.exp_avg", ...) and the guard's last finite
// parameters ("last_finite.NAME").
struct Parts {
  std::vector<std::pair<std::string, torch::Tensor>> model;       // parameters, then buffers
  size_t network_parameters = 0;  // model's first ones, in the order the guard's copies take them
  std::vector<std::pair<std::string, torch::Tensor>> parameters;  // the optimiser's, by network name
  OptimizerKind kind;
};

Parts parts_of(torch::nn::Module& network, torch::optim::Optimizer& optimizer) {
  Parts parts;
  std::map<const void*, std::string> names;
  for (const auto& item : network.named_parameters()) {
    parts.model.emplace_back(item.key(), item.value());
    names[item.value().unsafeGetTensorImpl()] = item.key();
  }
  parts.network_parameters = parts.model.size();
  for (const auto& item : network.named_buffers()) {
    if (item.value().defined()) parts.model.emplace_back(item.key(), item.value());
  }
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      const auto name = names.find(p.unsafeGetTensorImpl());
      if (name == names.end()) throw std::logic_error("checkpoint: the optimiser holds a tensor the network does not");
      parts.parameters.emplace_back(name->second, p);
    }
  }
  parts.kind = optimizer_kind(optimizer);
  return parts;
}

// The optimiser's parameter of that network name; nullptr when none is.
const torch::Tensor* parameter_named(const Parts& parts, const std::string& name) {
  for (const auto& [parameter_name, p] : parts.parameters) {
    if (parameter_name == name) return &p;
  }
  return nullptr;
}

std::string hex(const torch::Tensor& bytes) {
  const auto cpu = bytes.contiguous().cpu();
  std::string out;
  const auto* data = cpu.data_ptr<uint8_t>();
  for (int64_t i = 0; i < cpu.numel(); ++i) out += fmt::format("{:02x}", data[i]);
  return out;
}

torch::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

// The counters, the loop's values, the logs (as CSV text, whose numbers
// round-trip exactly and whose NaN is ""), the optimiser's step counts and
// learning rates, and the generators' states (hex), as one JSON document;
// a number that is not finite (a loss gone NaN) as "nan", "inf" or "-inf",
// which JSON can hold and the reader takes back.
Config state_document(const TrainingState& state, const Parts& parts, torch::optim::Optimizer& optimizer,
                      size_t last_finite, const at::Generator* generator) {
  Config logs = Config::object(), steps = Config::object(), rates = Config::array();
  for (const auto& [name, table] : state.logs) logs[name] = to_csv(table);
  auto& states = optimizer.state();
  for (const auto& [name, p] : parts.parameters) {
    const auto it = states.find(state_key(states, p));
    if (it != states.end()) steps[name] = parameter_state(*it->second).step;
  }
  for (const auto& group : optimizer.param_groups()) rates.push_back(group.options().get_lr());
  Config generators = {{"default", hex(generator_state(at::detail::getDefaultCPUGenerator()))}};
  if (generator) generators["loop"] = hex(generator_state(*generator));
  return non_finite_as_text(Config{{"step", state.step}, {"epochs_done", state.epochs_done},
                                  {"images_seen", state.images_seen}, {"train_seconds", state.train_seconds},
                                  {"elapsed_seconds", state.elapsed_seconds}, {"values", state.values},
                                  {"logs", logs},
                                  {"optimizer", {{"kind", parts.kind.name}, {"steps", steps}, {"lr", rates}}},
                                  {"last_finite", last_finite}, {"generators", generators}});
}

std::string_view raw_bytes(const torch::Tensor& cpu) {
  return {static_cast<const char*>(cpu.data_ptr()), static_cast<size_t>(cpu.nbytes())};
}

// Writes `file` atomically.
void save_checkpoint(const fs::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, const TrainingState& state,
                     const ParameterSnapshot& last_finite, const at::Generator* generator) {
  const Parts parts = parts_of(network, optimizer);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, t] : parts.model) tensors.emplace_back("model." + name, t);
  auto& states = optimizer.state();
  for (const auto& [name, p] : parts.parameters) {
    const auto it = states.find(state_key(states, p));
    if (it == states.end()) continue;
    for (const auto& [part, t] : parameter_state(*it->second).tensors) {
      tensors.emplace_back("optimizer." + name + "." + part, t);
    }
  }
  const auto& copies = last_finite.copies();
  for (size_t i = 0; i < copies.size() && i < parts.network_parameters; ++i) {
    tensors.emplace_back("last_finite." + parts.model[i].first, copies[i]);
  }
  std::vector<torch::Tensor> host;  // keeps the CPU copies alive while their bytes are written
  std::vector<SafetensorsBlob> blobs;
  for (const auto& [name, t] : tensors) {
    host.push_back(t.detach().to(torch::kCPU).contiguous());
    blobs.push_back({name, dtype_name(host.back()), host.back().sizes().vec(), {}});
  }
  for (size_t i = 0; i < blobs.size(); ++i) blobs[i].bytes = raw_bytes(host[i]);
  const Config document = state_document(state, parts, optimizer, copies.size(), generator);
  std::string bytes;
  try {
    bytes = safetensors_bytes(blobs, {{"format", kFormat}, {"config", config.dump()}, {"state", document.dump()}});
  } catch (const std::length_error& e) {
    throw std::runtime_error(fmt::format(
        "checkpoint {}: {} (its training state holds every log row so far): set log_every higher, or "
        "checkpoint_every=0 to keep no checkpoint", file.string(), e.what()));
  }
  write_file_atomic(file, bytes);
}

// ------------------------------------------------------ what is loaded ---

// A generator's saved state, read and checked, as a tensor set_state takes.
torch::Tensor saved_generator_state(const Config& doc, const std::string& key, at::Generator generator,
                                    const std::string& where) {
  static_assert(at::MERSENNE_STATE_N == kMersenneStateWords, "the mt19937 state's words");
  if (generator_state(generator).numel() != static_cast<int64_t>(kCpuGeneratorStateBytes)) {
    throw std::logic_error(fmt::format("checkpoint: LibTorch's CPU generator state is {} bytes, not the {} pln reads",
                                       generator_state(generator).numel(), kCpuGeneratorStateBytes));
  }
  const std::string bytes = read_generator_state(doc, key, where);
  auto out = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
  return out;
}

void set_generator_state(at::Generator generator, const torch::Tensor& bytes) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(bytes);
}

// Loads `file` into the network, the optimiser, the guard, the generators and
// `state`: everything is read and checked (the header, every tensor against
// this run's, the training state's fields against the layout and this run's
// sizes, the generators' states) before anything is built or changed.
void load_checkpoint(const fs::path& file, const Config& config, const StateLayout& layout,
                     torch::nn::Module& network, torch::optim::Optimizer& optimizer, TrainingState& state,
                     ParameterSnapshot& last_finite, at::Generator* generator) {
  const std::string source = file.string();
  const Parts parts = parts_of(network, optimizer);
  // The largest file this run's checkpoint can be: its header, the network,
  // every optimiser tensor and the last finite copies of the parameters.
  uint64_t most = 8 + kMaxSafetensorsHeaderBytes;
  for (const auto& [name, t] : parts.model) most += t.nbytes();
  for (const auto& [name, p] : parts.parameters) most += parts.kind.tensors.size() * p.nbytes();
  for (size_t i = 0; i < parts.network_parameters; ++i) most += parts.model[i].second.nbytes();
  const std::string bytes = read_regular_file(file, most);
  const SafetensorsFile header = parse_safetensors(bytes, source);

  auto corrupt = [&](const std::string& why) {
    return std::runtime_error(fmt::format("checkpoint {} is unreadable or corrupt: {}", source, why));
  };
  const auto meta = [&](const char* key) -> const std::string& {
    const auto it = header.metadata.find(key);
    if (it == header.metadata.end()) throw corrupt(fmt::format("__metadata__.{} is missing", key));
    return it->second;
  };
  if (meta("format") != kFormat) throw corrupt(fmt::format("__metadata__.format is not {}", kFormat));
  const Config saved = parse_json_text(meta("config"), source + ": __metadata__.config");
  if (!saved.is_object()) throw corrupt("__metadata__.config is not an object");
  if (const auto diff = differences(saved, config); !diff.empty()) {
    throw std::runtime_error(fmt::format(
        "checkpoint {} was written with another configuration ({}); run without --resume to start again", source,
        fmt::join(diff, "; ")));
  }
  const Config doc = parse_json_text(meta("state"), source + ": __metadata__.state");
  const std::string where = source + ": state";

  TrainingState loaded;
  try {
    // The loop's state, the optimiser's counts and rates, and the guard's
    // copies of the last parameters with a finite loss, against this run.
    loaded = read_training_state(doc, layout, where);
    std::vector<std::string> parameter_names;
    for (const auto& [name, p] : parts.parameters) parameter_names.push_back(name);
    const size_t groups = optimizer.param_groups().size();
    const SavedOptimizer saved_optimizer =
        read_saved_optimizer(doc, parts.kind.name, parameter_names, groups, loaded.step, where);
    const int64_t kept = read_last_finite_count(doc, static_cast<int64_t>(parts.network_parameters), where);
    // The tensors, each of this run's dtype and shape.
    std::map<std::string, ExpectedTensor> expected;
    for (const auto& [name, t] : parts.model) expected["model." + name] = expected_like(t);
    for (const auto& [name, step] : saved_optimizer.steps) {
      for (const auto& field_name : parts.kind.tensors) {
        expected["optimizer." + name + "." + field_name] = expected_like(*parameter_named(parts, name));
      }
    }
    for (int64_t i = 0; i < kept; ++i) {
      expected["last_finite." + parts.model[i].first] = expected_like(parts.model[i].second);
    }
    check_tensors(header, expected, source);
    const auto default_state = saved_generator_state(doc, "default", at::detail::getDefaultCPUGenerator(), where);
    const auto loop_state = generator ? saved_generator_state(doc, "loop", *generator, where) : torch::Tensor();

    // Checked: now built, each tensor copied from the file's bytes.
    auto tensor = [&](const std::string& name, const torch::Tensor& like) {
      const auto& entry = header.tensors.at(name);
      auto cpu = torch::empty(like.sizes(), like.options().device(torch::kCPU).requires_grad(false));
      std::memcpy(cpu.data_ptr(), bytes.data() + header.data_start + entry.begin, entry.end - entry.begin);
      return cpu.to(like.device());
    };
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> model_values, copies;
    for (const auto& [name, t] : parts.model) model_values.push_back(tensor("model." + name, t));
    for (int64_t i = 0; i < kept; ++i) {
      copies.push_back(tensor("last_finite." + parts.model[i].first, parts.model[i].second));
    }
    std::map<std::string, ParameterState> optimizer_values;
    for (const auto& [name, step] : saved_optimizer.steps) {
      const torch::Tensor& p = *parameter_named(parts, name);
      optimizer_values[name].step = step;
      for (const auto& field_name : parts.kind.tensors) {
        optimizer_values[name].tensors[field_name] = tensor("optimizer." + name + "." + field_name, p);
      }
    }
    set_generator_state(at::detail::getDefaultCPUGenerator(), default_state);
    if (generator) set_generator_state(*generator, loop_state);
    for (size_t i = 0; i < parts.model.size(); ++i) parts.model[i].second.copy_(model_values[i]);
    auto& states = optimizer.state();
    states.clear();
    for (const auto& [name, values] : optimizer_values) {
      states[state_key(states, *parameter_named(parts, name))] = make_state(parts.kind.name, values);
    }
    for (size_t g = 0; g < groups; ++g) {
      optimizer.param_groups()[g].options().set_lr(saved_optimizer.learning_rates[g]);
    }
    last_finite.set_copies(std::move(copies));
  } catch (const c10::Error& e) {
    throw corrupt(e.what_without_backtrace());
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(e.what());
  }
  state = std::move(loaded);
}

}  // namespace

Checkpointer::Checkpointer(const RunContext& context, const Config& config, torch::nn::Module& network,
                           torch::optim::Optimizer& optimizer, DivergenceGuard& guard, StateLayout layout,
                           at::Generator* generator)
    : context_(context), config_(config), network_(network), optimizer_(optimizer), guard_(guard),
      layout_(std::move(layout)), generator_(generator) {}

bool Checkpointer::resume(TrainingState& state) {
  const auto file = context_.out / kCheckpointName, pickled = context_.out / kPickledCheckpointName;
  std::error_code error;
  const bool present = fs::symlink_status(file, error).type() != fs::file_type::not_found;
  if (context_.resume && present) {
    load_checkpoint(file, config_, layout_, network_, optimizer_, state, guard_.last_finite(), generator_);
    fmt::print("resumed from {} after step {}{}\n", file.string(), state.step,
               state.epochs_done > 0 ? fmt::format(", epoch {}", state.epochs_done) : std::string());
    return true;
  }
  if (context_.resume && fs::symlink_status(pickled, error).type() != fs::file_type::not_found) {
    throw std::runtime_error(fmt::format(
        "{} is a checkpoint in the format of earlier versions (LibTorch's pickled archive), which pln no longer "
        "loads: unpickling can run code from the file. Start the run afresh: run without --resume, or delete {} "
        "(a grid then starts the cell again)", pickled.string(), pickled.string()));
  }
  if (context_.resume) fmt::print("no checkpoint in {}; starting from the beginning\n", context_.out.string());
  // Starting afresh: another configuration's checkpoint must never be resumed later.
  fs::remove(file);
  fs::remove(pickled);
  return false;
}

void Checkpointer::save(const TrainingState& state) {
  save_checkpoint(context_.out / kCheckpointName, config_, network_, optimizer_, state, guard_.last_finite(),
                  generator_);
  if (++written_ == context_.stop_after_checkpoints) {
    throw SessionStopped(fmt::format("stopped after {} checkpoint(s), at step {}", written_, state.step));
  }
}

}  // namespace pln::exp
