#pragma once
// Compact result records, as shipped under results/: a finished grid's
// manifest (grid.json), records.csv, the per-cell files its figures draw, and
// provenance.json (the source revision, machine, threads, LibTorch, kernels
// and BLAS that produced it). `pln plot` and `pln validate --check` take such
// a folder as they take the grid itself; checkpoints and logs stay behind.

#include "records/csv.h"
#include "spec/config.h"

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

struct PackRequest {
  std::filesystem::path grid;      ///< a finished grid's directory
  std::filesystem::path dest;      ///< the compact folder to write
  std::string revision;            ///< source revision of the run; "" to read it from the cells' config.json
};

/// The cells records.csv names, each checked to be one directory of the grid
/// that grid.json lists (a record's `cell` of "../x" reaches no other file);
/// throws std::runtime_error naming records.csv and the row otherwise.
std::vector<std::string> record_cells(const Config& manifest, const CsvTable& records,
                                      const std::filesystem::path& grid);

/// Writes the compact folder (replacing an earlier pack there whole, in one
/// step; refusing a folder that is not one), holding a lock on its parent
/// folder so that packs there take turns; rebuilds the grid's records.csv
/// when it holds fewer cells than have finished. Returns the folder's size in
/// bytes. Throws std::runtime_error naming the file or the cell at fault for
/// an unfinished grid, a missing file or a record's path leaving the grid.
uintmax_t pack_results(const PackRequest& request);

}  // namespace pln::exp
