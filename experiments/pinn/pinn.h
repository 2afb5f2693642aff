#pragma once
// `pln pinn`: physics-informed networks on the Helmholtz problems, with the
// output-NTK analysis, and the grids of the paper's PINN table.

#include "common/experiment.h"

namespace pln::exp {

Experiment pinn_experiment();

namespace pinn {
/// Draws a finished run's figures (loss, error, solution) into its directory.
void plot_run(const std::filesystem::path& run_dir);
/// Draws a grid's table (Markdown and CSV) and figures into `dir`.
void plot_grid(const std::filesystem::path& dir, const CsvTable& records);
}  // namespace pinn

}  // namespace pln::exp
