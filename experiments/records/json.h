#pragma once
// The JSON records of a run (config.json, summary.json, grid.json): reading
// them, and numbers that are not finite, which JSON cannot hold.

#include "spec/config.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <optional>

namespace pln::exp {

/// The deepest nesting a JSON record may have. pln's own records nest four
/// levels at most; the limit stops a crafted file from exhausting the stack of
/// the code that walks the document (copies and comparisons recurse).
constexpr int kMaxJsonDepth = 64;

/// The largest JSON file read: pln's largest record (a paper grid's grid.json)
/// is well under a megabyte, so a bigger file is not a record.
constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t{64} << 20;

/// `text` parsed as JSON; throws std::runtime_error starting with `source`
/// when it is not JSON or nests deeper than kMaxJsonDepth.
Config parse_json_text(const std::string& text, const std::string& source);

/// A JSON record's content (every pln record is an object); throws
/// std::runtime_error naming the file when it cannot be read, is a symbolic
/// link or not a regular file, is larger than kMaxJsonBytes, is not JSON,
/// nests deeper than kMaxJsonDepth or is not an object.
Config read_json_file(const std::filesystem::path& path);

/// `value` with every number that is not finite, at any depth, replaced by the
/// string "inf", "-inf" or "nan": JSON has no such numbers (nlohmann would
/// write null), and records.csv then holds the same text.
Config non_finite_as_text(const Config& value);

/// The number a metric of summary.json stands for: a number; "inf", "-inf" or
/// "nan" (written so by write_summary); or null, NaN as older summaries wrote
/// it. nullopt for any other value.
std::optional<double> metric_number(const Config& value);

}  // namespace pln::exp
