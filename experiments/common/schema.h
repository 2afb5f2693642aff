#pragma once
// Schema checks of results on disk, used by `pln validate`: every grid's
// records.csv has its columns, one row per cell and no NaN or missing metric
// (except the experiment's nan_allowed); every summary.json names a known
// experiment and holds its metrics as finite numbers.

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

/// Problems found under `root` (empty: all good), each naming the file.
std::vector<std::string> check_results(const std::filesystem::path& root);

}  // namespace pln::exp
