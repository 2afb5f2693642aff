#include "records/json.h"

#include "system/atomic_file.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace pln::exp {

namespace {

struct TooDeep {};

}  // namespace

Config parse_json_text(const std::string& text, const std::string& source) {
  // nlohmann's parser keeps its own stack, but it builds what it reads: the
  // callback refuses a nesting level before anything that deep exists.
  const Config::parser_callback_t limit_depth = [](int depth, nlohmann::json::parse_event_t event, Config&) {
    if (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) {
      if (depth >= kMaxJsonDepth) throw TooDeep{};
    }
    return true;
  };
  try {
    return Config::parse(text, limit_depth);
  } catch (const TooDeep&) {
    throw std::runtime_error(fmt::format("{}: not a pln record: JSON nested deeper than {} levels", source,
                                         kMaxJsonDepth));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": not valid JSON: " + e.what());
  }
}

Config read_json_file(const std::filesystem::path& path) {
  std::error_code error;
  if (const auto size = std::filesystem::file_size(path, error); !error && size > kMaxJsonBytes) {
    throw std::runtime_error(fmt::format("{}: {} bytes, more than any pln record ({} MiB at most)", path.string(),
                                         size, kMaxJsonBytes >> 20));
  }
  Config record = parse_json_text(read_regular_file(path, kMaxJsonBytes), path.string());
  if (!record.is_object()) {
    throw std::runtime_error(fmt::format("{}: not a pln record: a JSON object expected, the file holds {}",
                                         path.string(), record.type_name()));
  }
  return record;
}

Config non_finite_as_text(const Config& value) {
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return value;
  }
  if (!value.is_structured()) return value;
  Config copy = value;
  for (auto& item : copy.items()) item.value() = non_finite_as_text(item.value());
  return copy;
}

std::optional<double> metric_number(const Config& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

}  // namespace pln::exp
