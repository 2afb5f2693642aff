#pragma once
// CSV tables (RFC 4180 quoting) for records and per-step logs. Readers look
// columns up by name, so files written by an older version, with fewer
// columns, still read.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pln::exp {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  /// Index of `name` in the header, or nullopt.
  std::optional<size_t> find(const std::string& name) const;
  /// Index of `name`; throws std::runtime_error naming the column when absent.
  size_t column(const std::string& name) const;
  /// Cell of `row` in column `name`, "" when the column is absent.
  std::string get(size_t row, const std::string& name) const;
};

/// Parses CSV text; throws std::runtime_error naming `source` and the line on
/// a row whose field count differs from the header's or an unterminated quote.
CsvTable parse_csv(const std::string& text, const std::string& source);
CsvTable read_csv(const std::filesystem::path& path);
std::string to_csv(const CsvTable& table);

/// A per-step log: rows kept in memory and the whole file replaced atomically
/// every `flush_every` rows and on flush(), so a killed run leaves the rows of
/// its last flush and never a torn line.
class StepLog {
 public:
  StepLog(std::filesystem::path path, std::vector<std::string> header, size_t flush_every = 200);
  void add(const std::vector<double>& values);
  void flush();
  /// The rows so far (for a checkpoint).
  const CsvTable& table() const { return table_; }
  /// Replaces the rows with a checkpoint's, whose header must be this log's
  /// (throws std::runtime_error naming the file otherwise), and writes them.
  void restore(const CsvTable& saved);

 private:
  std::filesystem::path path_;
  CsvTable table_;
  size_t flush_every_;
  size_t unflushed_ = 0;
};

/// The head of a Markdown table: "| a | b |\n|---|---|\n".
std::string markdown_head(const std::vector<std::string>& columns);

/// Shortest text that parses back to the same double; "" for NaN (a missing value).
std::string number_text(double value);
/// The number a cell holds; NaN for "" (a missing value) or text that is not a number.
double number_value(const std::string& text);
/// Median of `values`; NaN when empty.
double median(std::vector<double> values);

}  // namespace pln::exp
