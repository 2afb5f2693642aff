#include "records/csv.h"

#include "system/atomic_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>
#include <string_view>
#include <stdexcept>

namespace pln::exp {

namespace {

std::string quote(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::optional<size_t> CsvTable::find(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

size_t CsvTable::column(const std::string& name) const {
  if (auto i = find(name)) return *i;
  throw std::runtime_error("CSV has no column '" + name + "'");
}

std::string CsvTable::get(size_t row, const std::string& name) const {
  const auto i = find(name);
  return i ? rows.at(row).at(*i) : std::string();
}

CsvTable parse_csv(const std::string& raw, const std::string& source) {
  // A spreadsheet that saves as "UTF-8 CSV" puts a byte-order mark first,
  // which would otherwise become part of the first column's name.
  const std::string_view bom = "\xEF\xBB\xBF";
  std::string_view text = raw;
  if (text.compare(0, bom.size(), bom) == 0) text.remove_prefix(bom.size());
  // Each field costs a std::string (and each row a vector) beyond its bytes:
  // a file of commas would take 30 times its size. The table is refused as
  // soon as its fields would take more than kCsvCellsPerByte times the file.
  const uint64_t budget = kCsvCellsPerByte * text.size() + kCsvCellsSlack;
  uint64_t cells = 0;
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  size_t line_no = 1, record_line = 1;
  auto end_field = [&] {
    cells += sizeof(std::string);
    if (cells > budget) {
      throw std::runtime_error(fmt::format(
          "{}: not a pln record: over {} fields by line {}, more than its {} bytes can hold as a table ({} bytes of "
          "fields per byte of file at most)", source, cells / sizeof(std::string), line_no, text.size(),
          kCsvCellsPerByte));
    }
    if (record.empty() && !lines.empty()) record.reserve(lines.front().size());
    record.push_back(std::move(field));
    field.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_no;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      end_field();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        end_field();
        cells += sizeof(record);
        lines.push_back(std::move(record));
        record = {};
      }
      any = false;
      record_line = ++line_no;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) {
    throw std::runtime_error(fmt::format("{}: unterminated quoted field starting on line {}",
                                         source, record_line));
  }
  if (any || !field.empty()) {
    end_field();
    lines.push_back(std::move(record));
  }
  CsvTable table;
  if (lines.empty()) throw std::runtime_error(source + ": empty CSV, no header");
  table.header = std::move(lines.front());
  for (size_t r = 1; r < lines.size(); ++r) {
    if (lines[r].size() != table.header.size()) {
      throw std::runtime_error(fmt::format("{}: row {} has {} fields, the header has {}", source,
                                           r, lines[r].size(), table.header.size()));
    }
    table.rows.push_back(std::move(lines[r]));
  }
  return table;
}

CsvTable read_csv(const std::filesystem::path& path) {
  std::error_code error;
  if (const auto size = std::filesystem::file_size(path, error); !error && size > kMaxCsvBytes) {
    throw std::runtime_error(fmt::format("{}: {} bytes, more than any pln record ({} MiB at most)", path.string(), size,
                                         kMaxCsvBytes >> 20));
  }
  return parse_csv(read_regular_file(path, kMaxCsvBytes), path.string());
}

std::string to_csv(const CsvTable& table) {
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i) out += ',';
      out += quote(fields[i]);
    }
    out += '\n';
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

double number_value(const std::string& text) {
  if (text.empty()) return std::numeric_limits<double>::quiet_NaN();
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    return used == text.size() ? v : std::numeric_limits<double>::quiet_NaN();
  } catch (const std::exception&) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

std::string number_text(double value) {
  if (std::isnan(value)) return "";
  return fmt::format("{}", value);
}

std::string markdown_head(const std::vector<std::string>& columns) {
  std::string head = "|", rule = "|";
  for (const auto& c : columns) head += " " + c + " |", rule += "---|";
  return head + "\n" + rule + "\n";
}

}  // namespace pln::exp
