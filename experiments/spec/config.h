#pragma once
// An experiment's configuration: an ordered set of typed key/value pairs. A
// preset fills every key; `--set key=value` overrides one, parsed to the type
// the preset gave it, so a typo or a wrong type is an error, never ignored.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

using Config = nlohmann::ordered_json;

/// Applies `key=value` to `config`; throws std::invalid_argument when the key is
/// unknown (listing the known ones) or the value does not parse as the key's type.
void apply_override(Config& config, const std::string& assignment, const std::string& experiment);

/// Applies several `key=value` assignments in order.
void apply_overrides(Config& config, const std::vector<std::string>& assignments,
                     const std::string& experiment);

/// Splits "key=value"; throws std::invalid_argument on a missing '=' or empty key.
std::pair<std::string, std::string> split_assignment(const std::string& assignment);

/// The value as text, as `--set` would accept it back (numbers round-trip exactly).
std::string value_text(const nlohmann::ordered_json& value);

// Typed access that names the key on a type mismatch.
int64_t get_int(const Config& config, const std::string& key);
double get_double(const Config& config, const std::string& key);
bool get_bool(const Config& config, const std::string& key);
std::string get_string(const Config& config, const std::string& key);

/// Throws std::invalid_argument("<experiment>: <key> must be one of a|b|c, got 'x'").
void require_one_of(const Config& config, const std::string& key,
                    const std::vector<std::string>& allowed, const std::string& experiment);

/// The key's value when low <= value <= high (value < high when
/// `high_inclusive` is false); otherwise throws std::invalid_argument("<experiment>:
/// <key> must be >= low, got v" (or "<= high", or "in [low, high]"), the bounds
/// that are not the type's limits). Instantiated for int64_t and double.
template <typename T>
T require_range(const Config& config, const std::string& key, T low, T high, const std::string& experiment,
                bool high_inclusive = true);

/// No bound on that side of require_range.
template <typename T>
constexpr T kUnbounded = std::numeric_limits<T>::max();

}  // namespace pln::exp
