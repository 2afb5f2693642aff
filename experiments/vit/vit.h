#pragma once
// `pln vit`: a Vision Transformer with PLN, PLS, LN or no norm at each norm site.

#include "spec/experiment.h"

namespace pln::exp {

Experiment vit_experiment();

namespace vit {
/// Best test accuracy (training accuracy for fixed random labels) against the
/// group size, LN as the reference line; a table of the same figures.
void plot_group_sweep(const std::filesystem::path& dir, const CsvTable& records, const std::filesystem::path& out);
/// Accuracy curves of one run.
void plot_run(const std::filesystem::path& dir, const std::filesystem::path& out);
}  // namespace vit

}  // namespace pln::exp
