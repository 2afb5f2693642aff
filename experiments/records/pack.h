#pragma once
// Compact result records, as shipped under results/: a finished grid's
// manifest (grid.json), records.csv, the per-cell files its figures draw, and
// provenance.json (the source revision, machine, threads, LibTorch, kernels
// and BLAS that produced it). `pln plot` and `pln validate --check` take such
// a folder as they take the grid itself; checkpoints and logs stay behind.

#include <filesystem>
#include <string>

namespace pln::exp {

struct PackRequest {
  std::filesystem::path grid;      ///< a finished grid's directory
  std::filesystem::path dest;      ///< the compact folder to write
  std::string revision;            ///< source revision of the run; "" to read it from the cells' config.json
};

/// Writes the compact folder (replacing the files it holds); returns its
/// size in bytes. Throws std::runtime_error naming the file or the cell at
/// fault for an unfinished grid or a missing file.
uintmax_t pack_results(const PackRequest& request);

}  // namespace pln::exp
