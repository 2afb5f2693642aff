#include "spec/keys.h"

#include "system/printable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

namespace pln::exp {

namespace {

enum class Type { kInteger, kNumber, kBoolean, kText };

Type type_of(const Key& key) {
  if (key.value.is_boolean()) return Type::kBoolean;
  if (key.value.is_number_integer()) return Type::kInteger;
  if (key.value.is_number_float()) return Type::kNumber;
  return Type::kText;
}

bool has_type(const Config& value, Type type) {
  switch (type) {
    case Type::kInteger: return value.is_number_integer();
    case Type::kNumber: return value.is_number_float();
    case Type::kBoolean: return value.is_boolean();
    case Type::kText: return value.is_string();
  }
  return false;
}

const char* expectation(Type type) {
  switch (type) {
    case Type::kInteger: return "an integer";
    case Type::kNumber: return "a finite number";
    case Type::kBoolean: return "true or false";
    case Type::kText: return "text";
  }
  return "";
}

bool parse_bool(const std::string& text, bool& out) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return out = true, true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return out = false, true;
  return false;
}

bool parse_int(const std::string& text, int64_t& out) {
  size_t used = 0;
  try {
    out = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

bool parse_double(const std::string& text, double& out) {
  // strtod, not stod: stod refuses a subnormal number (1e-310) as out of range.
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  return std::isfinite(out) && !(errno == ERANGE && std::abs(out) > 1);
}

// A bound as the key's type writes it: 1 for an integer key, 0.5 for a number.
std::string bound_text(double bound, Type type) {
  return type == Type::kInteger ? fmt::format("{}", static_cast<int64_t>(bound)) : fmt::format("{}", bound);
}

std::string range_text(const Range& r, Type type) {
  if (r.low && r.high) {
    return fmt::format("in {}{}, {}{}", r.low_open ? "(" : "[", bound_text(*r.low, type), bound_text(*r.high, type),
                       r.high_open ? ")" : "]");
  }
  if (r.low) return fmt::format("{} {}", r.low_open ? ">" : ">=", bound_text(*r.low, type));
  if (r.high) return fmt::format("{} {}", r.high_open ? "<" : "<=", bound_text(*r.high, type));
  return "";
}

bool in_range(double v, const Range& r) {
  if (r.low && !(r.low_open ? v > *r.low : v >= *r.low)) return false;
  if (r.high && !(r.high_open ? v < *r.high : v <= *r.high)) return false;
  return !std::isnan(v);
}

// Throws ConfigError (or what check_text throws) when `value` is not of the
// key's type or not among what it allows.
void check_value(const Key& key, const Config& value) {
  const Type type = type_of(key);
  if (!has_type(value, type)) {
    throw ConfigError(fmt::format("key '{}' expects {}, got {}", key.name, expectation(type), value.dump()));
  }
  if (type == Type::kInteger || type == Type::kNumber) {
    const double v = value.get<double>();
    if (in_range(v, key.range)) return;
    const std::string got = type == Type::kInteger ? fmt::format("{}", value.get<int64_t>()) : fmt::format("{}", v);
    throw ConfigError(fmt::format("{} must be {}, got {}", key.name, range_text(key.range, type), got));
  }
  if (type != Type::kText) return;
  const auto text = value.get<std::string>();
  // A configuration is written as JSON (config.json, a checkpoint), which
  // holds UTF-8 text only, and is printed: found by fuzzing `--set`.
  if (printable(text, true) != text) {
    throw ConfigError(fmt::format("{} must be UTF-8 text without control characters, got '{}'", key.name,
                                  printable(text)));
  }
  if (!key.choices.empty() && std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end()) {
    throw ConfigError(fmt::format("{} must be one of {}, got '{}'", key.name, fmt::join(key.choices, "|"), text));
  }
  if (key.check_text) key.check_text(text);
}

Key make_key(std::string name, Config value, std::string help) {
  Key key;
  key.name = std::move(name);
  key.value = std::move(value);
  key.help = std::move(help);
  return key;
}

}  // namespace

namespace {
int64_t g_element_ceiling = kDefaultElementCeiling;
}  // namespace

int64_t element_ceiling() { return g_element_ceiling; }

void set_element_ceiling(int64_t ceiling) {
  if (ceiling < 1) throw std::invalid_argument(fmt::format("--max-elements must be >= 1, got {}", ceiling));
  g_element_ceiling = ceiling;
}

void check_elements(const std::string& what, const std::vector<int64_t>& factors) {
  int64_t product = 1;
  bool overflow = false;
  for (int64_t f : factors) overflow = overflow || f < 0 || __builtin_mul_overflow(product, f, &product);
  if (overflow || product > g_element_ceiling) {
    throw ConfigError(fmt::format("{} is {} elements, more than the ceiling of {} for one tensor "
                                  "(--max-elements N raises it)", what,
                                  overflow ? std::string("more than 2^63") : std::to_string(product),
                                  g_element_ceiling));
  }
}

void check_network_size(const std::string& what, int64_t layers, const std::vector<int64_t>& per_layer) {
  int64_t product = 1;
  bool overflow = false;
  for (int64_t f : per_layer) overflow = overflow || f < 0 || __builtin_mul_overflow(product, f, &product);
  check_elements(what, {layers, overflow ? std::numeric_limits<int64_t>::max() : std::max(product, kLayerOverheadElements)});
}

void check_float32_range(const std::string& key, double value) {
  if (std::abs(value) > std::numeric_limits<float>::max()) {
    throw ConfigError(fmt::format("{} ({}) is beyond the range of float32 ({}), in which the network computes", key,
                                  value, std::numeric_limits<float>::max()));
  }
}

void check_group_divides(const std::string& norm, int64_t width, int64_t group) {
  if (norm != "pln" && norm != "pls") return;
  if (group < 1 || width % group != 0) {
    throw ConfigError(fmt::format("width ({}) must be a positive multiple of group ({})", width, group));
  }
}

Range any_value() { return {}; }
Range at_least(double low) { return {low, std::nullopt, false, false}; }
Range above(double low) { return {low, std::nullopt, true, false}; }
Range closed(double low, double high) { return {low, high, false, false}; }
Range right_open(double low, double high) { return {low, high, false, true}; }
Range left_open(double low, double high) { return {low, high, true, false}; }

Key integer(std::string name, int64_t value, Range range, std::string help) {
  Key key = make_key(std::move(name), value, std::move(help));
  key.range = range;
  return key;
}

Key integer(std::string name, int64_t value, std::string help) {
  return integer(std::move(name), value, any_value(), std::move(help));
}

Key number(std::string name, double value, Range range, std::string help) {
  Key key = make_key(std::move(name), value, std::move(help));
  key.range = range;
  return key;
}

Key number(std::string name, double value, std::string help) {
  return number(std::move(name), value, any_value(), std::move(help));
}

Key boolean(std::string name, bool value, std::string help) { return make_key(std::move(name), value, std::move(help)); }

Key choice(std::string name, std::string value, std::vector<std::string> allowed, std::string help) {
  Key key = make_key(std::move(name), std::move(value), std::move(help));
  key.choices = std::move(allowed);
  return key;
}

Key text(std::string name, std::string value, std::string help) {
  return make_key(std::move(name), std::move(value), std::move(help));
}

Key text(std::string name, std::string value, std::string allowed, std::function<void(const std::string&)> check,
         std::string help) {
  Key key = make_key(std::move(name), std::move(value), std::move(help));
  key.allowed_text = std::move(allowed);
  key.check_text = std::move(check);
  return key;
}

std::string type_name(const Key& key) {
  switch (type_of(key)) {
    case Type::kInteger: return "integer";
    case Type::kNumber: return "number";
    case Type::kBoolean: return "bool";
    case Type::kText: return "text";
  }
  return "";
}

std::string allowed_text(const Key& key) {
  const Type type = type_of(key);
  if (type == Type::kInteger || type == Type::kNumber) return range_text(key.range, type);
  if (!key.choices.empty()) return fmt::format("{}", fmt::join(key.choices, "|"));
  return key.allowed_text;
}

KeyTable::KeyTable(std::string family, std::vector<Key> keys, Check check)
    : family_(std::move(family)), keys_(std::move(keys)), check_(std::move(check)) {
  std::set<std::string> names;
  for (const auto& key : keys_) {
    if (!names.insert(key.name).second) {
      throw std::logic_error(fmt::format("{}: the key table names '{}' twice", family_, key.name));
    }
    if (key.value.is_null() || key.value.is_structured()) {
      throw std::logic_error(fmt::format("{}: key '{}' has no default of a key's type", family_, key.name));
    }
    try {
      check_value(key, key.value);
    } catch (const std::exception& e) {
      throw std::logic_error(fmt::format("{}: the default of '{}' is not allowed: {}", family_, key.name, e.what()));
    }
  }
}

const Key* KeyTable::find(const std::string& name) const {
  for (const auto& key : keys_) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

Config KeyTable::defaults() const {
  Config config = Config::object();
  for (const auto& key : keys_) config[key.name] = key.value;
  return config;
}

void KeyTable::apply(Config& config, const std::string& assignment) const {
  // Named, not a structured binding: the lambda below captures them (C++17).
  const auto parts = split_assignment(assignment);
  const std::string &name = parts.first, &text = parts.second;
  const Key* key = find(name);
  if (!key) {
    std::vector<std::string> names;
    for (const auto& k : keys_) names.push_back(k.name);
    throw std::invalid_argument(
        fmt::format("{}: unknown key '{}'; known keys: {}", family_, name, fmt::join(names, ", ")));
  }
  const Type type = type_of(*key);
  const auto fail = [&] {
    throw std::invalid_argument(
        fmt::format("{}: key '{}' expects {}, got '{}'", family_, name, expectation(type), text));
  };
  auto& value = config[name];
  if (type == Type::kBoolean) {
    bool b = false;
    if (!parse_bool(text, b)) fail();
    value = b;
  } else if (type == Type::kInteger) {
    int64_t i = 0;
    if (!parse_int(text, i)) fail();
    value = i;
  } else if (type == Type::kNumber) {
    double d = 0;
    if (!parse_double(text, d)) fail();
    value = d;
  } else {
    value = text;
  }
}

void KeyTable::apply(Config& config, const std::vector<std::string>& assignments) const {
  for (const auto& a : assignments) apply(config, a);
}

void KeyTable::validate(const Config& config) const {
  try {
    for (const auto& item : config.items()) {
      if (!find(item.key())) {
        std::vector<std::string> names;
        for (const auto& k : keys_) names.push_back(k.name);
        throw ConfigError(fmt::format("unknown key '{}'; known keys: {}", item.key(), fmt::join(names, ", ")));
      }
    }
    for (const auto& key : keys_) {
      const auto it = config.find(key.name);
      if (it == config.end()) throw ConfigError(fmt::format("the configuration lacks key '{}'", key.name));
      check_value(key, *it);
    }
    if (check_) check_(config);
  } catch (const ConfigError& e) {
    throw std::invalid_argument(fmt::format("{}: {}", family_, e.what()));
  }
}

std::string KeyTable::help() const {
  struct Row {
    std::string name, type, value, allowed, help;
  };
  std::vector<Row> rows = {{"key", "type", "default", "allowed", "help"}};
  for (const auto& key : keys_) {
    const std::string value = key.value.is_string() && key.value.get<std::string>().empty() ? "\"\"" : value_text(key.value);
    rows.push_back({key.name, type_name(key), value, allowed_text(key), key.help});
  }
  size_t w[4] = {0, 0, 0, 0};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], r.name.size());
    w[1] = std::max(w[1], r.type.size());
    w[2] = std::max(w[2], r.value.size());
    w[3] = std::max(w[3], r.allowed.size());
  }
  std::string out;
  for (const auto& r : rows) {
    auto line = fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}", r.name, w[0], r.type, w[1], r.value, w[2],
                            r.allowed, w[3], r.help);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace pln::exp
