#pragma once
// `pln pinn`: physics-informed networks on the Helmholtz problems, with the
// output-NTK analysis, and the grids of the paper's PINN table.

#include "spec/experiment.h"

namespace pln::exp {

Experiment pinn_experiment();

namespace pinn {
/// Draws a finished run's figures (loss, error, solution) into `out`.
void plot_run(const std::filesystem::path& run_dir, const std::filesystem::path& out);
/// Writes a grid's tables (the best errors, and beside the paper's Table 1)
/// and draws its figures into `out`, from the records and cells under `dir`.
void plot_grid(const std::filesystem::path& dir, const CsvTable& records, const std::filesystem::path& out);
/// The per-cell curves plot_grid draws.
std::vector<std::string> figure_inputs(const CsvTable& records);
}  // namespace pinn

}  // namespace pln::exp
