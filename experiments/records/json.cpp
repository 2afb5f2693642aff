#include "records/json.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace pln::exp {

Config read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  try {
    return Config::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
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
