// The checkpoint reader on any bytes: the safetensors header parsed and
// checked against a run's tensors (those of `pln fourier --preset smoke`:
// every name, dtype and shape, so that a mutated name is refused as a
// missing or unknown tensor), and the training state in its metadata checked
// against the same run, as run/checkpoint.cpp reads them before building
// anything. Whatever it accepts must hold what the checks promise: every
// range inside the data, every count within the run's.

#include "records/json.h"
#include "records/safetensors.h"
#include "run/training_state.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace pln::exp;

// The fourier smoke network (Linear 1 -> 32, a norm's 32 weights and biases,
// Linear 32 -> 1) under each of the checkpoint's prefixes.
std::map<std::string, ExpectedTensor> fourier_smoke_tensors() {
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"0.weight", {32, 1}}, {"0.bias", {32}}, {"1.weight", {32}},
      {"1.bias", {32}},      {"2.weight", {1, 32}}, {"2.bias", {1}}};
  std::map<std::string, ExpectedTensor> expected;
  for (const auto& [name, shape] : shapes) {
    for (const std::string prefix : {"model.", "last_finite."}) expected[prefix + name] = {"F32", shape};
    for (const std::string part : {".exp_avg", ".exp_avg_sq"}) expected["optimizer." + name + part] = {"F32", shape};
  }
  return expected;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto expected = fourier_smoke_tensors();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto file = parse_safetensors(bytes, "fuzz");
    for (const auto& [name, entry] : file.tensors) {
      if (entry.begin > entry.end || file.data_start + entry.end > size) std::abort();
    }
    for (const auto& [key, text] : file.metadata) (void)parse_json_text(text, "fuzz: " + key);
    check_tensors(file, expected, "fuzz");
    for (const auto& [name, want] : expected) {
      const auto& entry = file.tensors.at(name);
      if (entry.dtype != want.dtype || entry.shape != want.shape) std::abort();
    }
    const auto state_text = file.metadata.find("state");
    if (state_text == file.metadata.end()) return 0;
    const Config doc = parse_json_text(state_text->second, "fuzz: state");
    const StateLayout layout{40, 0, 0, {{"train.csv", {{"step", "loss", "lr"}}}}, {{"loss", {{StateField::kNumber}}}}};
    const TrainingState state = read_training_state(doc, layout, "fuzz: state");
    if (state.step > layout.steps) std::abort();
    const std::vector<std::string> parameters = {"0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"};
    (void)read_saved_optimizer(doc, "adam", parameters, 1, state.step, "fuzz: state");
    (void)read_last_finite_count(doc, 6, "fuzz: state");
    (void)read_generator_state(doc, "default", "fuzz: state");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
