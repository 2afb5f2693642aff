#pragma once
// Tables in the documentation that are generated from shipped records. A
// Markdown file marks each such table:
//
//     <!-- table results/fourier-paper slopes.md -->
//     ...the content of slopes.md as `pln plot results/fourier-paper` writes it...
//     <!-- end table -->
//
// check_doc_tables regenerates every referenced results folder's tables (into
// a scratch directory) and reports each block that differs from them;
// update_doc_tables rewrites the blocks instead.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pln::exp {

struct DocTable {
  std::filesystem::path doc;  ///< the Markdown file
  size_t line = 0;            ///< 1-based line of the opening marker
  std::string results;        ///< results folder, relative to the root
  std::string file;           ///< the generated file within it
};

/// Every marked table of Markdown `text` (from `doc`, for the messages).
/// Throws std::runtime_error naming the doc and line for an unclosed or nested
/// table, a closing marker alone, or a marker whose folder or file is not a
/// plain relative path (absolute, '..', a character outside letters, digits
/// and ._-/): a marker never names a file outside the repository.
std::vector<DocTable> parse_doc_tables(const std::string& text, const std::filesystem::path& doc);

/// Every marked table of the Markdown files given (paths as given).
std::vector<DocTable> find_doc_tables(const std::vector<std::filesystem::path>& docs);

/// README.md and docs/*.md under `root`.
std::vector<std::filesystem::path> documentation_files(const std::filesystem::path& root);

struct DocSync {
  std::vector<std::string> problems;            ///< file:line and what is wrong, one per block
  std::vector<std::filesystem::path> updated;   ///< docs rewritten (update mode)
};

/// Draws the tables of every results folder a doc references, under `scratch`,
/// using `plot(results_dir, out_dir)`, and compares each block with them: a
/// block that differs is a problem, or with `update` is rewritten. A missing
/// results folder or generated file is a problem either way.
DocSync sync_doc_tables(
    const std::filesystem::path& root, const std::vector<std::filesystem::path>& docs,
    const std::filesystem::path& scratch, bool update,
    const std::function<void(const std::filesystem::path&, const std::filesystem::path&)>& plot);

}  // namespace pln::exp
