#pragma once
// The launcher's side of a grid (Hydra's split of sweeper and launcher): where
// a Sweep's pending cells run. Locally in worker processes, spread over the
// visible GPUs (local_launcher.cpp); as shell command lines printed for any
// scheduler (command_launcher.cpp); or as a Slurm job array (slurm.cpp).

#include "sweep/cells.h"
#include "sweep/slurm.h"

namespace pln::exp {

/// Runs the pending cells in up to `jobs` worker processes at once, rebuilding
/// records.csv after every cell; returns the number of cells that failed.
int launch_local(const Sweep& sweep, int jobs);

/// Prints each pending cell's command line, one a line.
void launch_commands(const Sweep& sweep);

/// Writes grid.slurm, commands.txt and cells.txt for the pending cells into
/// the grid's directory (a CUDA cell gets one GPU unless `options` says more).
void launch_slurm(const Sweep& sweep, const SlurmOptions& options);

}  // namespace pln::exp
