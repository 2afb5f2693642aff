// The CSV record reader on any text: parsed within its memory budget, each
// row as wide as the header, and written back to text that parses the same.

#include "records/csv.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto table = pln::exp::parse_csv(text, "fuzz");
    for (const auto& row : table.rows) {
      if (row.size() != table.header.size()) std::abort();
    }
    for (size_t r = 0; r < table.rows.size(); ++r) (void)pln::exp::number_value(table.get(r, table.header[0]));
    // With two columns or more no row is blank, so the text written back
    // holds the same table (a second byte-order mark aside, which is read
    // as the first).
    if (table.header.size() > 1 && table.header[0].rfind("\xEF\xBB\xBF", 0) != 0) {
      const auto again = pln::exp::parse_csv(pln::exp::to_csv(table), "fuzz again");
      if (again.header != table.header || again.rows != table.rows) std::abort();
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
