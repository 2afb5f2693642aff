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

namespace {

// Walks CSV text as RFC 4180 reads it: sink.field(length, text, line) at the
// end of each field (`text` holds its characters only when Sink::kBuilds) and
// sink.end_record() at the end of each record that is not blank. Throws on an
// unterminated quote, naming `source` and the line it opened on.
template <typename Sink>
void scan_csv(std::string_view text, const std::string& source, Sink& sink) {
  std::string field;  // one field at a time, when building: never longer than the longest
  if constexpr (Sink::kBuilds) field.reserve(sink.longest_field());
  size_t length = 0, line_no = 1, record_line = 1;
  bool quoted = false, any = false;
  const auto add = [&](char c) {
    ++length;
    if constexpr (Sink::kBuilds) field += c;
  };
  const auto end_field = [&] {
    sink.field(length, field, line_no);
    length = 0;
    field.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          add('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_no;
        add(c);
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
      if (any || length > 0) {
        end_field();
        sink.end_record();
      }
      any = false;
      record_line = ++line_no;
    } else {
      add(c);
      any = true;
    }
  }
  if (quoted) {
    throw std::runtime_error(fmt::format("{}: unterminated quoted field starting on line {}", source, record_line));
  }
  if (any || length > 0) {
    end_field();
    sink.end_record();
  }
}

// The bytes a field of `length` characters takes in a table: the std::string,
// and beyond the 15 characters it holds inline, its heap block as malloc
// rounds it (the characters, the terminating zero, 8 bytes of bookkeeping, in
// steps of 16).
uint64_t field_bytes(size_t length) {
  return sizeof(std::string) + (length > 15 ? (uint64_t{length} + 1 + 8 + 15) / 16 * 16 : 0);
}

// The first pass: the table's shape and the memory it will take, checked
// before anything is allocated. Every record must have the header's fields.
class CsvShape {
 public:
  static constexpr bool kBuilds = false;
  CsvShape(const std::string& source, uint64_t text_bytes)
      : source_(source), text_bytes_(text_bytes), budget_(kCsvCellsPerByte * text_bytes + kCsvCellsSlack) {}

  void field(size_t length, const std::string&, size_t line) {
    ++in_record_;
    if (length > longest) charge(length - longest, line);  // the one field being read, when building
    longest = std::max(longest, length);
    charge(field_bytes(length), line);
  }
  void end_record() {
    if (records == 0) {
      header = in_record_;
    } else if (in_record_ != header) {
      throw std::runtime_error(fmt::format("{}: row {} has {} fields, the header has {}", source_, records,
                                           in_record_, header));
    }
    // The row's vector, and its array's malloc bookkeeping.
    charge(sizeof(std::vector<std::string>) + 16, 0);
    ++records;
    in_record_ = 0;
  }

  size_t header = 0, records = 0, longest = 0;

 private:
  void charge(uint64_t bytes, size_t line) {
    bytes_ += bytes;
    if (bytes_ > budget_) {
      throw std::runtime_error(fmt::format(
          "{}: not a pln record: its fields would take over {} bytes by line {}, more than its {} bytes can hold as "
          "a table ({} bytes per byte of file, and {} MiB, at most)", source_, budget_, line, text_bytes_,
          kCsvCellsPerByte, kCsvCellsSlack >> 20));
    }
  }

  const std::string& source_;
  uint64_t text_bytes_, budget_, bytes_ = 0;
  size_t in_record_ = 0;
};

// The second pass: the fields copied into a table allocated to its exact size.
class CsvBuilder {
 public:
  static constexpr bool kBuilds = true;
  explicit CsvBuilder(const CsvShape& shape) : width_(shape.header), longest_(shape.longest) {
    table.rows.reserve(shape.records - 1);
    record_.reserve(width_);
  }
  size_t longest_field() const { return longest_; }
  void field(size_t, const std::string& text, size_t) { record_.emplace_back(text); }  // a copy: exactly its size
  void end_record() {
    if (table.header.empty()) table.header = std::move(record_);
    else table.rows.push_back(std::move(record_));
    record_ = {};
    record_.reserve(width_);
  }

  CsvTable table;

 private:
  size_t width_, longest_;
  std::vector<std::string> record_;
};

}  // namespace

CsvTable parse_csv(const std::string& raw, const std::string& source) {
  // A spreadsheet that saves as "UTF-8 CSV" puts a byte-order mark first,
  // which would otherwise become part of the first column's name.
  const std::string_view bom = "\xEF\xBB\xBF";
  std::string_view text = raw;
  if (text.compare(0, bom.size(), bom) == 0) text.remove_prefix(bom.size());
  // Each field costs a std::string (and each row a vector) beyond its bytes:
  // a file of commas would take 30 times its size. A first pass measures the
  // table and refuses it when it would take more than kCsvCellsPerByte times
  // the text; the second allocates every row and field to its exact size, so
  // that nothing grows by doubling past what was measured.
  CsvShape shape(source, text.size());
  scan_csv(text, source, shape);
  if (shape.records == 0) throw std::runtime_error(source + ": empty CSV, no header");
  CsvBuilder builder(shape);
  scan_csv(text, source, builder);
  return std::move(builder.table);
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
