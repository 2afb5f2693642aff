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

// A first pass over the text that builds nothing and stops at the first
// nesting level past the limit. (nlohmann's parser with a callback would
// check as it builds, but its callback parser scans the enclosing array at
// the end of each object: a text of N empty objects takes N^2 / 2 steps.)
class DepthCheck : public nlohmann::json_sax<Config> {
 public:
  bool too_deep = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool enter() {
    too_deep = ++depth_ > kMaxJsonDepth;
    return !too_deep;
  }
  bool leave() {
    --depth_;
    return true;
  }
  int depth_ = 0;
};

}  // namespace

Config parse_json_text(const std::string& text, const std::string& source) {
  // Nothing is built from a text nested deeper than the limit (copies and
  // comparisons of what was built would recurse that deep).
  DepthCheck depth;
  Config::sax_parse(text, &depth);
  if (depth.too_deep) {
    throw std::runtime_error(fmt::format("{}: not a pln record: JSON nested deeper than {} levels", source,
                                         kMaxJsonDepth));
  }
  try {
    return Config::parse(text);
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
