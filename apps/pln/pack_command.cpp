// `pln pack GRID DEST`: the compact records of a finished grid, as shipped under results/.

#include "commands.h"

#include <sweep/pack.h>

#include <fmt/format.h>

#include <memory>

namespace pln::cli {

void add_pack_command(CLI::App& app) {
  auto request = std::make_shared<exp::PackRequest>();
  auto* cmd = app.add_subcommand(
      "pack", "copy a finished grid's manifest, records, the per-cell curves its figures draw and its provenance "
              "into a compact folder (results/<family>-<grid>/)");
  cmd->add_option("grid", request->grid, "the finished grid's directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("dest", request->dest, "the folder to write")->required();
  cmd->add_option("--revision", request->revision,
                  "source revision that ran the grid (default: the one its cells' config.json record)");
  cmd->callback([request] {
    const auto bytes = exp::pack_results(*request);
    fmt::print("packed {} into {} ({:.0f} KiB)\n", request->grid.string(), request->dest.string(),
               double(bytes) / 1024);
  });
}

}  // namespace pln::cli
