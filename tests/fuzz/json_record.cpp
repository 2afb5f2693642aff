// The JSON record reader on any text: parsed with its nesting limit, then
// walked as the readers walk records (non-finite metrics, copies).

#include "records/json.h"

#include <cstdint>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto record = pln::exp::parse_json_text(text, "fuzz");
    const auto copy = pln::exp::non_finite_as_text(record);
    if (record.is_object()) {
      for (const auto& item : record.items()) (void)pln::exp::metric_number(item.value());
    }
    (void)copy.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
