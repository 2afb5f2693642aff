// `pln docs [--update]`: the documentation's tables against the records they are generated from.

#include "commands.h"

#include <records/doc_tables.h>
#include <system/atomic_file.h>

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace pln::cli {

namespace {

namespace fs = std::filesystem;

struct DocsArgs {
  std::string root = ".";
  std::vector<std::string> files;
  bool update = false;
};

void docs(const DocsArgs& args) {
  const fs::path root(args.root);
  std::vector<fs::path> files;
  for (const auto& f : args.files) files.emplace_back(f);
  if (files.empty()) files = exp::documentation_files(root);
  if (files.empty()) throw std::runtime_error(args.root + ": no README.md or docs/*.md to check");
  // The markers first: one that names a path out of the repository is refused
  // before anything is drawn.
  const auto tables = exp::find_doc_tables(files);
  std::string tmpl = (fs::temp_directory_path() / "pln-docs-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
  const fs::path scratch(tmpl);
  const exp::RemovedOnExit remove_scratch(scratch);
  const auto result = exp::sync_doc_tables(root, files, scratch, args.update, [](const fs::path& dir, const fs::path& out) {
    plot_directory(dir.string(), out.string(), /*quiet=*/true);
  });
  for (const auto& doc : result.updated) fmt::print("updated {}\n", doc.string());
  if (!result.problems.empty()) {
    std::string text = fmt::format("docs: {} of {} generated table(s) do not match:", result.problems.size(), tables.size());
    for (const auto& p : result.problems) text += "\n  - " + p;
    throw std::runtime_error(text);
  }
  fmt::print("docs: {} generated table(s) in {} file(s) {}\n", tables.size(), files.size(),
             args.update ? "up to date" : "match their records");
}

}  // namespace

void add_docs_command(CLI::App& app) {
  auto args = std::make_shared<DocsArgs>();
  auto* cmd = app.add_subcommand("docs", "check (or --update) the documentation's tables against the records "
                                         "under results/ they are generated from");
  cmd->add_option("--root", args->root, "the repository (default: the current directory)")->capture_default_str();
  cmd->add_option("files", args->files, "Markdown files to check (default: README.md and docs/*.md under --root)");
  cmd->add_flag("--update", args->update, "rewrite the tables that differ instead of failing");
  cmd->callback([args] { docs(*args); });
}

}  // namespace pln::cli
