#pragma once
// CSV tables (RFC 4180 quoting) for records and per-step logs (step_log.h). Readers look
// columns up by name, so files written by an older version, with fewer
// columns, still read.

#include <cstdint>
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

/// The largest CSV file read: pln's largest record (a 2-D PINN's
/// solution.csv on a 1001 x 1001 grid) is about 60 MB; a bigger file is not a
/// record, and reading it holds it whole in memory.
constexpr uint64_t kMaxCsvBytes = uint64_t{256} << 20;
/// The memory a table may take beyond its text, per byte of the text, and a
/// floor for small files: parse_csv measures a table before it allocates it
/// (each field's std::string and heap block, each row's vector) and refuses
/// one that would take more, so that reading a file of N bytes takes at most
/// N + kCsvCellsPerByte * N + kCsvCellsSlack bytes (the text, then the table;
/// the test CsvPeakMemoryIsProportionalToTheFile measures it). pln's records
/// take 2 to 6 bytes of table per byte (numbers of several digits each).
constexpr uint64_t kCsvCellsPerByte = 8;
constexpr uint64_t kCsvCellsSlack = uint64_t{16} << 20;

/// Parses CSV text; throws std::runtime_error naming `source` and the line or
/// row on a row whose field count differs from the header's, an unterminated
/// quote, or a table larger than kCsvCellsPerByte allows the text, before
/// anything is allocated for the table.
CsvTable parse_csv(const std::string& text, const std::string& source);
CsvTable read_csv(const std::filesystem::path& path);
std::string to_csv(const CsvTable& table);

/// The head of a Markdown table: "| a | b |\n|---|---|\n".
std::string markdown_head(const std::vector<std::string>& columns);

/// Shortest text that parses back to the same double; "" for NaN (a missing value).
std::string number_text(double value);
/// The number a cell holds; NaN for "" (a missing value) or text that is not a number.
double number_value(const std::string& text);

}  // namespace pln::exp
