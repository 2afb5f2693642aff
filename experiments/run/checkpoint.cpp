#include "run/checkpoint.h"

#include "records/json.h"
#include "records/safetensors.h"
#include "system/atomic_file.h"
#include "system/printable.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

OptimizerKind optimizer_kind(const torch::optim::Optimizer& optimizer) {
  const auto amsgrad = [&](auto* options_type) {
    for (const auto& group : optimizer.param_groups()) {
      if (static_cast<const std::remove_pointer_t<decltype(options_type)>&>(group.options()).amsgrad()) return true;
    }
    return false;
  };
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) {
    OptimizerKind kind{"adam", {"exp_avg", "exp_avg_sq"}, true};
    if (amsgrad(static_cast<torch::optim::AdamOptions*>(nullptr))) kind.tensors.push_back("max_exp_avg_sq");
    return kind;
  }
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) {
    OptimizerKind kind{"adamw", {"exp_avg", "exp_avg_sq"}, true};
    if (amsgrad(static_cast<torch::optim::AdamWOptions*>(nullptr))) kind.tensors.push_back("max_exp_avg_sq");
    return kind;
  }
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return {"sgd", {"momentum_buffer"}, false};
  throw std::logic_error("checkpoint: an optimiser other than Adam, AdamW or SGD");
}

// One parameter's optimiser state as named tensors, and back.
std::map<std::string, torch::Tensor> state_tensors(const torch::optim::OptimizerParamState& state) {
  std::map<std::string, torch::Tensor> out;
  if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(&state)) {
    out = {{"exp_avg", adam->exp_avg()}, {"exp_avg_sq", adam->exp_avg_sq()}, {"max_exp_avg_sq", adam->max_exp_avg_sq()}};
  } else if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&state)) {
    out = {{"exp_avg", adamw->exp_avg()}, {"exp_avg_sq", adamw->exp_avg_sq()},
           {"max_exp_avg_sq", adamw->max_exp_avg_sq()}};
  } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(&state)) {
    out = {{"momentum_buffer", sgd->momentum_buffer()}};
  }
  for (auto it = out.begin(); it != out.end();) it = it->second.defined() ? std::next(it) : out.erase(it);
  return out;
}

int64_t state_step(const torch::optim::OptimizerParamState& state) {
  if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(&state)) return adam->step();
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&state)) return adamw->step();
  return 0;
}

std::unique_ptr<torch::optim::OptimizerParamState> make_state(const std::string& kind, int64_t step,
                                                              std::map<std::string, torch::Tensor>& tensors) {
  auto take = [&](const char* name) { return tensors.count(name) ? tensors.at(name) : torch::Tensor(); };
  if (kind == "adam") {
    auto state = std::make_unique<torch::optim::AdamParamState>();
    state->step(step);
    state->exp_avg(take("exp_avg"));
    state->exp_avg_sq(take("exp_avg_sq"));
    if (tensors.count("max_exp_avg_sq")) state->max_exp_avg_sq(take("max_exp_avg_sq"));
    return state;
  }
  if (kind == "adamw") {
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(step);
    state->exp_avg(take("exp_avg"));
    state->exp_avg_sq(take("exp_avg_sq"));
    if (tensors.count("max_exp_avg_sq")) state->max_exp_avg_sq(take("max_exp_avg_sq"));
    return state;
  }
  auto state = std::make_unique<torch::optim::SGDParamState>();
  state->momentum_buffer(take("momentum_buffer"));
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
// learning rates, and the generators' states (hex), as one JSON document.
Config state_document(const TrainingState& state, const Parts& parts, torch::optim::Optimizer& optimizer,
                      size_t last_finite, const at::Generator* generator) {
  Config logs = Config::object(), steps = Config::object(), rates = Config::array();
  for (const auto& [name, table] : state.logs) logs[name] = to_csv(table);
  auto& states = optimizer.state();
  for (const auto& [name, p] : parts.parameters) {
    const auto it = states.find(state_key(states, p));
    if (it != states.end()) steps[name] = state_step(*it->second);
  }
  for (const auto& group : optimizer.param_groups()) rates.push_back(group.options().get_lr());
  Config generators = {{"default", hex(generator_state(at::detail::getDefaultCPUGenerator()))}};
  if (generator) generators["loop"] = hex(generator_state(*generator));
  return Config{{"step", state.step}, {"epochs_done", state.epochs_done}, {"images_seen", state.images_seen},
                {"train_seconds", state.train_seconds}, {"elapsed_seconds", state.elapsed_seconds},
                {"values", state.values}, {"logs", logs},
                {"optimizer", {{"kind", parts.kind.name}, {"steps", steps}, {"lr", rates}}},
                {"last_finite", last_finite}, {"generators", generators}};
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
    for (const auto& [part, t] : state_tensors(*it->second)) tensors.emplace_back("optimizer." + name + "." + part, t);
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
  write_file_atomic(file, safetensors_bytes(blobs, {{"format", kFormat}, {"config", config.dump()},
                                                    {"state", document.dump()}}));
}

// ------------------------------------------------------ what is loaded ---

// A JSON field of the training state, of the type asked for, or an error
// naming it; an integer count is also held within [0, limit].
const Config& state_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end()) throw std::runtime_error(fmt::format("{}.{} is missing", where, key));
  return *it;
}

int64_t count_field(const Config& doc, const std::string& key, const std::string& where, int64_t limit) {
  const auto& value = state_field(doc, key, where);
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(limit)) ||
      value.get<int64_t>() > limit) {
    throw std::runtime_error(fmt::format("{}.{} is {}, not a count in 0..{}", where, key, value.dump(), limit));
  }
  return value.get<int64_t>();
}

double number_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto& value = state_field(doc, key, where);
  if (!value.is_number()) throw std::runtime_error(fmt::format("{}.{} is {}, not a number", where, key, value.dump()));
  return value.get<double>();
}

const Config& object_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto& value = state_field(doc, key, where);
  if (!value.is_object()) throw std::runtime_error(fmt::format("{}.{} is not an object", where, key));
  return value;
}

std::string string_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto& value = state_field(doc, key, where);
  if (!value.is_string()) throw std::runtime_error(fmt::format("{}.{} is not a string", where, key));
  return value.get<std::string>();
}

// The bytes of a hex string of `length` bytes, into a uint8 tensor.
torch::Tensor from_hex(const std::string& text, int64_t length, const std::string& where) {
  if (static_cast<int64_t>(text.size()) != 2 * length) {
    throw std::runtime_error(fmt::format("{} holds {} hex digits, this generator's state is {} bytes", where,
                                         text.size(), length));
  }
  auto out = torch::empty({length}, torch::kUInt8);
  auto* data = out.data_ptr<uint8_t>();
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error(fmt::format("{} is not lowercase hex", where));
  };
  for (int64_t i = 0; i < length; ++i) data[i] = static_cast<uint8_t>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  return out;
}

// The largest count a checkpoint may hold: the training loops count steps,
// epochs and images in int64, and JSON keeps integers exact to 2^53.
constexpr int64_t kMaxCount = int64_t{1} << 53;

// Loads `file` into the network, the optimiser, the guard, the generators and
// `state`: everything is read and checked (the header, every tensor against
// this run's, the training state's fields and counts against this run's
// sizes) before anything is built or changed.
void load_checkpoint(const fs::path& file, const Config& config, torch::nn::Module& network,
                     torch::optim::Optimizer& optimizer, TrainingState& state, ParameterSnapshot& last_finite,
                     at::Generator* generator) {
  const std::string source = file.string();
  const Parts parts = parts_of(network, optimizer);
  // The largest file this run's checkpoint can be: its header, the network,
  // every optimiser tensor and the last finite copies.
  uint64_t most = 8 + kMaxSafetensorsHeaderBytes;
  for (const auto& [name, t] : parts.model) most += t.nbytes();
  for (const auto& [name, p] : parts.parameters) most += (parts.kind.tensors.size() + 1) * p.nbytes();
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
  if (!doc.is_object()) throw corrupt("__metadata__.state is not an object");
  const std::string where = source + ": state";

  TrainingState loaded;
  try {
    loaded.step = count_field(doc, "step", where, kMaxCount);
    loaded.epochs_done = count_field(doc, "epochs_done", where, kMaxCount);
    loaded.images_seen = count_field(doc, "images_seen", where, kMaxCount);
    loaded.train_seconds = number_field(doc, "train_seconds", where);
    loaded.elapsed_seconds = number_field(doc, "elapsed_seconds", where);
    loaded.values = object_field(doc, "values", where);
    for (const auto& item : object_field(doc, "logs", where).items()) {
      if (!item.value().is_string()) throw std::runtime_error(fmt::format("{}.logs.{} is not a string", where, item.key()));
      loaded.logs[item.key()] = parse_csv(item.value().get<std::string>(), fmt::format("{}.logs.{}", where, item.key()));
    }
    // The optimiser: its kind, which parameters have state (with their step
    // counts, at most the steps taken) and each group's learning rate.
    const Config& saved_optimizer = object_field(doc, "optimizer", where);
    const std::string at_optimizer = where + ".optimizer";
    if (string_field(saved_optimizer, "kind", at_optimizer) != parts.kind.name) {
      throw std::runtime_error(fmt::format("{}.kind is '{}', this run's optimiser is {}", at_optimizer,
                                           saved_optimizer.at("kind").get<std::string>(), parts.kind.name));
    }
    const Config& steps = object_field(saved_optimizer, "steps", at_optimizer);
    std::map<std::string, ExpectedTensor> expected;
    for (const auto& [name, t] : parts.model) expected["model." + name] = expected_like(t);
    std::map<std::string, int64_t> with_state;
    for (const auto& item : steps.items()) {
      const auto p = std::find_if(parts.parameters.begin(), parts.parameters.end(),
                                  [&](const auto& named) { return named.first == item.key(); });
      if (p == parts.parameters.end()) {
        throw std::runtime_error(fmt::format("{}.steps names '{}', not a parameter of this run's optimiser",
                                             at_optimizer, printable(item.key())));
      }
      with_state[item.key()] = count_field(steps, item.key(), at_optimizer + ".steps", loaded.step);
      for (const auto& field_name : parts.kind.tensors) {
        expected["optimizer." + item.key() + "." + field_name] = expected_like(p->second);
      }
    }
    const Config& rates = state_field(saved_optimizer, "lr", at_optimizer);
    if (!rates.is_array() || rates.size() != optimizer.param_groups().size() ||
        !std::all_of(rates.begin(), rates.end(), [](const Config& r) { return r.is_number(); })) {
      throw std::runtime_error(fmt::format("{}.lr is not a list of {} numbers, one per parameter group", at_optimizer,
                                           optimizer.param_groups().size()));
    }
    // The guard's copies of the last parameters with a finite loss: none
    // (before the first step) or one per parameter of the network.
    const auto parameters = static_cast<int64_t>(parts.network_parameters);
    const int64_t kept = count_field(doc, "last_finite", where, parameters);
    if (kept != 0 && kept != parameters) {
      throw std::runtime_error(fmt::format("{}.last_finite is {}, neither 0 nor this network's {} parameters", where,
                                           kept, parameters));
    }
    for (int64_t i = 0; i < kept; ++i) {
      expected["last_finite." + parts.model[i].first] = expected_like(parts.model[i].second);
    }
    check_tensors(header, expected, source);
    const Config& generators = object_field(doc, "generators", where);
    const auto default_state = from_hex(string_field(generators, "default", where + ".generators"),
                                        generator_state(at::detail::getDefaultCPUGenerator()).numel(),
                                        where + ".generators.default");
    torch::Tensor loop_state;
    if (generator) {
      loop_state = from_hex(string_field(generators, "loop", where + ".generators"),
                            generator_state(*generator).numel(), where + ".generators.loop");
    }

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
    std::map<std::string, std::map<std::string, torch::Tensor>> optimizer_values;
    for (const auto& [name, step] : with_state) {
      const auto& p = std::find_if(parts.parameters.begin(), parts.parameters.end(),
                                   [&](const auto& named) { return named.first == name; })->second;
      for (const auto& field_name : parts.kind.tensors) {
        optimizer_values[name][field_name] = tensor("optimizer." + name + "." + field_name, p);
      }
    }
    // The generators' states are checked by LibTorch as they are set.
    {
      auto default_generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(default_generator.mutex());
      default_generator.set_state(default_state);
    }
    if (generator) {
      std::lock_guard<std::mutex> lock(generator->mutex());
      generator->set_state(loop_state);
    }
    for (size_t i = 0; i < parts.model.size(); ++i) parts.model[i].second.copy_(model_values[i]);
    auto& states = optimizer.state();
    states.clear();
    for (auto& [name, values] : optimizer_values) {
      const auto& p = std::find_if(parts.parameters.begin(), parts.parameters.end(),
                                   [&](const auto& named) { return named.first == name; })->second;
      states[state_key(states, p)] = make_state(parts.kind.name, with_state.at(name), values);
    }
    for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
      optimizer.param_groups()[g].options().set_lr(rates[g].get<double>());
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
                           torch::optim::Optimizer& optimizer, DivergenceGuard& guard, at::Generator* generator)
    : context_(context), config_(config), network_(network), optimizer_(optimizer), guard_(guard),
      generator_(generator) {}

bool Checkpointer::resume(TrainingState& state) {
  const auto file = context_.out / kCheckpointName, pickled = context_.out / kPickledCheckpointName;
  std::error_code error;
  const bool present = fs::symlink_status(file, error).type() != fs::file_type::not_found;
  if (context_.resume && present) {
    load_checkpoint(file, config_, network_, optimizer_, state, guard_.last_finite(), generator_);
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
