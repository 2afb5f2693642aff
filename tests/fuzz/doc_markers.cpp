// The documentation's table markers on any Markdown: every table it accepts
// names a plain relative folder and a file in it, never a path out.

#include "records/doc_tables.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& table : pln::exp::parse_doc_tables(text, "fuzz.md")) {
      const std::filesystem::path folder(table.results);
      if (folder.is_absolute() || table.file.find('/') != std::string::npos) std::abort();
      for (const auto& part : folder) {
        if (part == ".." || part == ".") std::abort();
      }
      if (table.file == ".." || table.file == ".") std::abort();
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
