#pragma once
// `pln fourier`: fitting dense Fourier series with PLN-Nets, LN-Nets and
// activation networks, and the 1,440-run grid of error against width.

#include "spec/experiment.h"

namespace pln::exp {

Experiment fourier_experiment();

namespace fourier {
/// The network of a (validated) configuration: Linear(1, w) -> layer, (depth - 1) x
/// [Linear(w, w) -> layer], Linear(w, 1).
torch::nn::Sequential make_network(const Config& config);
void plot_run(const std::filesystem::path& run_dir, const std::filesystem::path& out);
void plot_grid(const std::filesystem::path& dir, const CsvTable& records, const std::filesystem::path& out);
std::vector<std::string> figure_inputs(const CsvTable& records);
}  // namespace fourier

}  // namespace pln::exp
