#include "run/training_state.h"

#include "records/json.h"
#include "system/printable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace pln::exp {

namespace {

// A field of the object `doc`, or an error naming it (`where` is its path).
const Config& field(const Config& doc, const std::string& key, const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end()) throw std::runtime_error(fmt::format("{}.{} is missing", where, printable(key)));
  return *it;
}

const Config& object_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto& value = field(doc, key, where);
  if (!value.is_object()) throw std::runtime_error(fmt::format("{}.{} is not an object", where, key));
  return value;
}

std::string string_field(const Config& doc, const std::string& key, const std::string& where) {
  const auto& value = field(doc, key, where);
  if (!value.is_string()) throw std::runtime_error(fmt::format("{}.{} is not a string", where, key));
  return value.get<std::string>();
}

// An integer in 0..limit, or an error naming `at`.
int64_t count_value(const Config& value, const std::string& at, int64_t limit) {
  const bool in_range = value.is_number_unsigned()
                            ? value.get<uint64_t>() <= uint64_t(limit)
                            : value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= limit;
  if (!in_range) {
    throw std::runtime_error(
        fmt::format("{} is {}, not a count in 0..{} (this run's)", at, printable(value.dump()), limit));
  }
  return value.get<int64_t>();
}

int64_t count_field(const Config& doc, const std::string& key, const std::string& where, int64_t limit) {
  return count_value(field(doc, key, where), where + "." + key, limit);
}

// A number, one that is not finite written as the writer writes it ("nan",
// "inf", "-inf"; null, as earlier versions wrote NaN).
double number_value(const Config& value, const std::string& at) {
  const auto number = metric_number(value);
  if (!number) throw std::runtime_error(fmt::format("{} is {}, not a number", at, printable(value.dump())));
  return *number;
}

// A finite number >= 0 (a duration, a learning rate).
double non_negative_value(const Config& value, const std::string& at) {
  const double number = number_value(value, at);
  if (!(number >= 0) || !std::isfinite(number)) {
    throw std::runtime_error(fmt::format("{} is {}, not a finite number >= 0", at, number));
  }
  return number;
}

// Throws naming `where` and the first key of `saved` that `known` lacks.
template <typename Map>
void refuse_unknown(const Config& saved, const Map& known, const std::string& where, const char* what) {
  for (const auto& item : saved.items()) {
    if (!known.count(item.key())) {
      throw std::runtime_error(fmt::format("{}.{} is not {} this run keeps", where, printable(item.key()), what));
    }
  }
}

// The loop's values: every value the layout names (the optional ones when
// present) and no other, each field of its kind; numbers read back as
// numbers (NaN included), ready for the loop.
Config checked_values(const Config& saved, const StateLayout& layout, const TrainingState& loaded,
                      const std::string& where) {
  refuse_unknown(saved, layout.values, where, "a value");
  Config out = Config::object();
  for (const auto& [name, value] : layout.values) {
    const auto it = saved.find(name);
    const std::string at = where + "." + name;
    if (it == saved.end()) {
      if (value.required) throw std::runtime_error(at + " is missing");
      continue;
    }
    const bool scalar = value.fields.size() == 1;
    if (!scalar && (!it->is_array() || it->size() != value.fields.size())) {
      throw std::runtime_error(fmt::format("{} is not a list of {} values", at, value.fields.size()));
    }
    Config read = Config::array();
    for (size_t i = 0; i < value.fields.size(); ++i) {
      const Config& element = scalar ? *it : (*it)[i];
      const std::string at_element = scalar ? at : fmt::format("{}[{}]", at, i);
      switch (value.fields[i]) {
        case StateField::kNumber: read.push_back(number_value(element, at_element)); break;
        case StateField::kStep: read.push_back(count_value(element, at_element, loaded.step)); break;
        case StateField::kEpoch: read.push_back(count_value(element, at_element, loaded.epochs_done)); break;
      }
    }
    out[name] = scalar ? read[0] : read;
  }
  return out;
}

// The loop's logs: every log the layout names (the optional ones when
// present) and no other, each CSV text with its columns.
std::map<std::string, CsvTable> checked_logs(const Config& saved, const StateLayout& layout,
                                             const std::string& where) {
  refuse_unknown(saved, layout.logs, where, "a log");
  std::map<std::string, CsvTable> out;
  for (const auto& [name, log] : layout.logs) {
    const auto it = saved.find(name);
    const std::string at = where + "." + name;
    if (it == saved.end()) {
      if (log.required) throw std::runtime_error(at + " is missing");
      continue;
    }
    if (!it->is_string()) throw std::runtime_error(at + " is not a string");
    CsvTable table = parse_csv(it->get<std::string>(), at);
    if (table.header != log.columns) {
      throw std::runtime_error(fmt::format("{} has the columns ({}), this run's are ({})", at,
                                           printable(fmt::format("{}", fmt::join(table.header, ","))),
                                           fmt::join(log.columns, ",")));
    }
    out[name] = std::move(table);
  }
  return out;
}

// LibTorch's CPU generator state as get_state writes it and set_state reads
// it: TH's legacy state of the mt19937 engine, then the cached float normal
// sample. The float's flag is a bool there, read here as a byte: a bool
// holding another value is undefined behaviour.
struct LegacyGeneratorState {
  uint64_t the_initial_seed;
  int32_t left;
  int32_t seeded;
  uint64_t next;
  uint64_t state[kMersenneStateWords];
  double normal_x, normal_y, normal_rho;
  int32_t normal_is_valid;
};
struct GeneratorState {
  LegacyGeneratorState legacy;
  float next_float_normal_sample;
  uint8_t is_next_float_normal_sample_valid;
};
static_assert(sizeof(GeneratorState) == kCpuGeneratorStateBytes, "CPUGeneratorImplState's layout");

}  // namespace

TrainingState read_training_state(const Config& doc, const StateLayout& layout, const std::string& where) {
  if (!doc.is_object()) throw std::runtime_error(where + " is not an object");
  TrainingState loaded;
  loaded.step = count_field(doc, "step", where, layout.steps);
  loaded.epochs_done = count_field(doc, "epochs_done", where, layout.epochs);
  loaded.images_seen = count_field(doc, "images_seen", where, layout.images);
  loaded.train_seconds = non_negative_value(field(doc, "train_seconds", where), where + ".train_seconds");
  loaded.elapsed_seconds = non_negative_value(field(doc, "elapsed_seconds", where), where + ".elapsed_seconds");
  loaded.values = checked_values(object_field(doc, "values", where), layout, loaded, where + ".values");
  loaded.logs = checked_logs(object_field(doc, "logs", where), layout, where + ".logs");
  return loaded;
}

SavedOptimizer read_saved_optimizer(const Config& doc, const std::string& kind,
                                    const std::vector<std::string>& parameters, size_t groups, int64_t step,
                                    const std::string& where) {
  const Config& saved = object_field(doc, "optimizer", where);
  const std::string at = where + ".optimizer";
  if (const auto saved_kind = string_field(saved, "kind", at); saved_kind != kind) {
    throw std::runtime_error(
        fmt::format("{}.kind is '{}', this run's optimiser is {}", at, printable(saved_kind), kind));
  }
  SavedOptimizer out;
  for (const auto& item : object_field(saved, "steps", at).items()) {
    if (std::find(parameters.begin(), parameters.end(), item.key()) == parameters.end()) {
      throw std::runtime_error(fmt::format("{}.steps names '{}', not a parameter of this run's optimiser", at,
                                           printable(item.key())));
    }
    out.steps[item.key()] = count_value(item.value(), at + ".steps." + item.key(), step);
  }
  const Config& rates = field(saved, "lr", at);
  if (!rates.is_array() || rates.size() != groups) {
    throw std::runtime_error(fmt::format("{}.lr is not a list of {} numbers, one per parameter group", at, groups));
  }
  for (size_t g = 0; g < groups; ++g) {
    out.learning_rates.push_back(non_negative_value(rates[g], fmt::format("{}.lr[{}]", at, g)));
  }
  return out;
}

int64_t read_last_finite_count(const Config& doc, int64_t parameters, const std::string& where) {
  const int64_t kept = count_field(doc, "last_finite", where, parameters);
  if (kept != 0 && kept != parameters) {
    throw std::runtime_error(fmt::format("{}.last_finite is {}, neither 0 nor this network's {} parameters", where,
                                         kept, parameters));
  }
  return kept;
}

std::string read_generator_state(const Config& doc, const std::string& key, const std::string& where) {
  const std::string at = where + ".generators." + key;
  const std::string text = string_field(object_field(doc, "generators", where), key, where + ".generators");
  if (text.size() != 2 * kCpuGeneratorStateBytes) {
    throw std::runtime_error(fmt::format("{} holds {} hex digits, a generator's state is {} bytes", at, text.size(),
                                         kCpuGeneratorStateBytes));
  }
  const auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error(fmt::format("{} is not lowercase hex", at));
  };
  std::string bytes(kCpuGeneratorStateBytes, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  }
  check_generator_state(bytes, at);
  return bytes;
}

void check_generator_state(std::string_view bytes, const std::string& where) {
  if (bytes.size() != sizeof(GeneratorState)) {
    throw std::runtime_error(
        fmt::format("{}: {} bytes, a generator's state is {}", where, bytes.size(), sizeof(GeneratorState)));
  }
  GeneratorState g;
  std::memcpy(&g, bytes.data(), sizeof g);
  const auto& engine = g.legacy;
  constexpr int64_t n = kMersenneStateWords;
  const auto refuse = [&](const std::string& why) { return std::runtime_error(fmt::format("{}: {}", where, why)); };
  if (engine.seeded != 1) throw refuse(fmt::format("seeded is {}, not 1: not a seeded mt19937 state", engine.seeded));
  if (engine.left < 1 || engine.left > n) throw refuse(fmt::format("left is {}, not in 1..{}", engine.left, n));
  if (engine.next > uint64_t(n) || (engine.left > 1 && uint64_t(engine.left) + engine.next != uint64_t(n) + 1)) {
    throw refuse(fmt::format("next is {} with left {}: not {} - left, so its draws would read past the state",
                             engine.next, engine.left, n + 1));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (engine.state[i] > 0xffffffffu) {
      throw refuse(fmt::format("state[{}] is {}, wider than 32 bits", i, engine.state[i]));
    }
  }
  if (engine.normal_is_valid != 0 && engine.normal_is_valid != 1) {
    throw refuse(fmt::format("normal_is_valid is {}, neither 0 nor 1", engine.normal_is_valid));
  }
  if (engine.normal_is_valid == 1 && !std::isfinite(engine.normal_y)) {
    throw refuse("the cached normal sample is not finite");
  }
  if (g.is_next_float_normal_sample_valid > 1) {
    throw refuse(fmt::format("the float sample's flag is {}, neither 0 nor 1", g.is_next_float_normal_sample_valid));
  }
  if (g.is_next_float_normal_sample_valid == 1 && !std::isfinite(g.next_float_normal_sample)) {
    throw refuse("the cached float normal sample is not finite");
  }
}

}  // namespace pln::exp
