#pragma once
// Each subcommand of `pln` registers itself on the app; main.cpp lists them.

#include <CLI/CLI.hpp>

namespace pln::cli {

void add_demo_command(CLI::App& app);
/// One subcommand per experiment family: `pln <experiment> --preset ... --out DIR`.
void add_experiment_commands(CLI::App& app);
void add_grid_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_pack_command(CLI::App& app);
void add_docs_command(CLI::App& app);

/// Draws every figure and writes every table under `dir` (a run, a grid, or
/// a folder of them) into `out` ("": beside the records); returns the number
/// of grids and runs drawn.
int plot_directory(const std::string& dir, const std::string& out = "", bool quiet = false);

}  // namespace pln::cli
