// The checkpoint reader on any bytes: the safetensors header parsed and
// checked against a run's tensors, and the JSON of its metadata, as
// run/checkpoint.cpp reads them before building anything. Whatever it
// accepts must hold what the checks promise: every range inside the data.

#include "records/json.h"
#include "records/safetensors.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto file = pln::exp::parse_safetensors(bytes, "fuzz");
    for (const auto& [name, entry] : file.tensors) {
      if (entry.begin > entry.end || file.data_start + entry.end > size) std::abort();
    }
    for (const auto& [key, text] : file.metadata) (void)pln::exp::parse_json_text(text, "fuzz: " + key);
    // A pinn network's first layer, as a run expects it.
    pln::exp::check_tensors(file, {{"model.layers.0.weight", {"F64", {32, 1}}}, {"model.layers.0.bias", {"F64", {32}}}},
                            "fuzz");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
