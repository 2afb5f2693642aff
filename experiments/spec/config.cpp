#include "spec/config.h"

#include <fmt/format.h>

#include <stdexcept>

namespace pln::exp {

namespace {

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

}  // namespace pln::exp
