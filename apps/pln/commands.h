#pragma once
// Each subcommand of `pln` registers itself on the app; main.cpp lists them.

#include <CLI/CLI.hpp>

namespace pln::cli {

void add_demo_command(CLI::App& app);

}  // namespace pln::cli
