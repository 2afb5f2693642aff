#include "spec/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <type_traits>

namespace pln::exp {

namespace {

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
  size_t used = 0;
  try {
    out = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && std::isfinite(out);
}

const Config& at(const Config& config, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) throw std::invalid_argument("configuration has no key '" + key + "'");
  return *it;
}

}  // namespace

std::pair<std::string, std::string> split_assignment(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("--set expects key=value, got '" + assignment + "'");
  }
  return {assignment.substr(0, eq), assignment.substr(eq + 1)};
}

void apply_override(Config& config, const std::string& assignment, const std::string& experiment) {
  const auto [key, text] = split_assignment(assignment);
  const auto it = config.find(key);
  if (it == config.end()) {
    std::vector<std::string> keys;
    for (const auto& item : config.items()) keys.push_back(item.key());
    throw std::invalid_argument(fmt::format("{}: unknown key '{}'; known keys: {}", experiment, key,
                                            fmt::join(keys, ", ")));
  }
  auto& value = *it;
  const auto fail = [&](const char* type) {
    throw std::invalid_argument(
        fmt::format("{}: key '{}' expects {}, got '{}'", experiment, key, type, text));
  };
  if (value.is_boolean()) {
    bool b = false;
    if (!parse_bool(text, b)) fail("true or false");
    value = b;
  } else if (value.is_number_integer()) {
    int64_t i = 0;
    if (!parse_int(text, i)) fail("an integer");
    value = i;
  } else if (value.is_number_float()) {
    double d = 0;
    if (!parse_double(text, d)) fail("a finite number");
    value = d;
  } else {
    value = text;
  }
}

void apply_overrides(Config& config, const std::vector<std::string>& assignments,
                     const std::string& experiment) {
  for (const auto& a : assignments) apply_override(config, a, experiment);
}

std::string value_text(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return value.dump();
}

int64_t get_int(const Config& config, const std::string& key) {
  const auto& v = at(config, key);
  if (!v.is_number_integer()) throw std::invalid_argument("key '" + key + "' is not an integer");
  return v.get<int64_t>();
}

double get_double(const Config& config, const std::string& key) {
  const auto& v = at(config, key);
  if (!v.is_number()) throw std::invalid_argument("key '" + key + "' is not a number");
  return v.get<double>();
}

bool get_bool(const Config& config, const std::string& key) {
  const auto& v = at(config, key);
  if (!v.is_boolean()) throw std::invalid_argument("key '" + key + "' is not true/false");
  return v.get<bool>();
}

std::string get_string(const Config& config, const std::string& key) {
  const auto& v = at(config, key);
  if (!v.is_string()) throw std::invalid_argument("key '" + key + "' is not a string");
  return v.get<std::string>();
}

void require_one_of(const Config& config, const std::string& key,
                    const std::vector<std::string>& allowed, const std::string& experiment) {
  const auto value = get_string(config, key);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    throw std::invalid_argument(fmt::format("{}: {} must be one of {}, got '{}'", experiment, key,
                                            fmt::join(allowed, "|"), value));
  }
}

template <typename T>
T require_range(const Config& config, const std::string& key, T low, T high, const std::string& experiment,
                bool high_inclusive) {
  const T value = std::is_integral_v<T> ? static_cast<T>(get_int(config, key)) : static_cast<T>(get_double(config, key));
  const bool above = value >= low, below = high_inclusive ? value <= high : value < high;
  if (above && below) return value;  // NaN fails both
  const bool has_low = low != std::numeric_limits<T>::lowest(), has_high = high != std::numeric_limits<T>::max();
  std::string bound;
  if (has_low && has_high) {
    bound = fmt::format("in [{}, {}{}", low, high, high_inclusive ? "]" : ")");
  } else if (has_low) {
    bound = fmt::format(">= {}", low);
  } else {
    bound = fmt::format("{} {}", high_inclusive ? "<=" : "<", high);
  }
  throw std::invalid_argument(fmt::format("{}: {} must be {}, got {}", experiment, key, bound, value));
}

template int64_t require_range<int64_t>(const Config&, const std::string&, int64_t, int64_t, const std::string&, bool);
template double require_range<double>(const Config&, const std::string&, double, double, const std::string&, bool);

}  // namespace pln::exp
