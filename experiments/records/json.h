#pragma once
// The JSON records of a run (config.json, summary.json, grid.json): reading
// them, and numbers that are not finite, which JSON cannot hold.

#include "spec/config.h"

#include <filesystem>
#include <optional>

namespace pln::exp {

/// A JSON file's content; throws std::runtime_error naming the file when it
/// cannot be read or is not JSON.
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
