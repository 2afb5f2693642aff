// `--set key=value` on any text: applied to a key table of every kind of key
// (integer, number, boolean, choice, checked text) and validated, as a run
// resolves its configuration. Errors are std::invalid_argument, nothing else.

#include "spec/keys.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

const pln::exp::KeyTable& table() {
  using namespace pln::exp;
  static const KeyTable keys(
      "fuzz", {integer("steps", 40, at_least(1), "steps"), integer("seed", 0, "seed"),
               number("lr", 1e-3, above(0), "step size"), number("drop", 0.0, right_open(0, 1), "probability"),
               boolean("affine", true, "affine"), choice("norm", "pln", {"ln", "pln", "pls", "none"}, "norm"),
               text("device", "cpu", "cpu|cuda[:N]",
                    [](const std::string& t) {
                      if (t != "cpu" && t.rfind("cuda", 0) != 0) throw ConfigError("device must be cpu or cuda");
                    },
                    "device"),
               text("labels_file", "", "a path")},
      [](const Config& c) { check_elements("steps x steps", {c.at("steps").get<int64_t>(), c.at("steps").get<int64_t>()}); });
  return keys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string assignment(reinterpret_cast<const char*>(data), size);
  auto config = table().defaults();
  try {
    table().apply(config, assignment);
    table().validate(config);
    (void)pln::exp::value_text(config);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
