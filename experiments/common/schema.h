#pragma once
// Schema checks of results on disk, used by `pln validate`: every grid's
// records.csv has its columns, one row per cell and no NaN or missing metric
// (except the experiment's nan_allowed); every summary.json names a known
// experiment and holds its metrics as finite numbers. A grid whose manifest or
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
