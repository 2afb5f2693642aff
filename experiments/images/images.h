#pragma once
// `pln cnn` and `pln vgg`: image classification experiments.

#include "spec/experiment.h"

#include <filesystem>

namespace pln::exp {

Experiment cnn_experiment();
Experiment vgg_experiment();

namespace images {

/// Accuracy curves of one run (images/plots.cpp).
void plot_run(const std::filesystem::path& dir, const std::filesystem::path& out);
/// A table of final accuracies, median over seeds, per model and labels.
void plot_accuracy_table(const std::filesystem::path& dir, const CsvTable& records, const std::filesystem::path& out);
/// The accuracy table and heat maps of learning rate against init scale, one per variant.
void plot_vgg_grid(const std::filesystem::path& dir, const CsvTable& records, const std::filesystem::path& out);

}  // namespace images

}  // namespace pln::exp
