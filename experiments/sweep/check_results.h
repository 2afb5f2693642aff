#pragma once
// Schema checks of results on disk, used by `pln validate`: every grid's
// records.csv has its columns, one row per cell and every metric a number;
// every summary.json names a known experiment (a family, or the demo) and
// holds every metric. A number that is not finite ("inf", "-inf", "nan" as
// summary.json writes them; null or "" as older records did) is accepted only
// in a key the experiment lists in may_be_non_finite. A grid whose manifest or
// records no longer match the grid and preset the code defines today (cells,
// overrides, or any resolved configuration value) is noted, not failed: the
// records stay those of their manifest.

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

/// Problems found under `root` (empty: all good), each naming the file; notes
/// (the code's grid changed since) go to `notes` when given.
std::vector<std::string> check_results(const std::filesystem::path& root,
                                       std::vector<std::string>* notes = nullptr);

}  // namespace pln::exp
