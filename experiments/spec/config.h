#pragma once
// An experiment's configuration: an ordered set of typed key/value pairs, the
// keys and their order those of the family's key table (spec/keys.h), which
// parses `--set key=value` and validates every value before a run starts.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

using Config = nlohmann::ordered_json;

/// Splits "key=value"; throws std::invalid_argument on a missing '=' or empty key.
std::pair<std::string, std::string> split_assignment(const std::string& assignment);

/// The value as text, as `--set` would accept it back (numbers round-trip exactly).
std::string value_text(const nlohmann::ordered_json& value);

// Typed access that names the key on a type mismatch.
int64_t get_int(const Config& config, const std::string& key);
double get_double(const Config& config, const std::string& key);
bool get_bool(const Config& config, const std::string& key);
std::string get_string(const Config& config, const std::string& key);

}  // namespace pln::exp
