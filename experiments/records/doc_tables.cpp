#include "records/doc_tables.h"

#include "system/atomic_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

const std::regex kOpen(R"(^<!-- table (\S+) (\S+) -->$)");
const std::regex kClose(R"(^<!-- end table -->$)");

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A generated table's lines as a block holds them: ending with a newline.
std::string table_text(const fs::path& path) {
  std::string s = read_text(path);
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

struct Block {
  DocTable table;
  size_t first = 0, end = 0;  // 0-based lines of the content: [first, end); `end` is the closing marker
};

std::vector<Block> blocks_of(const fs::path& doc) {
  const auto lines = read_lines(doc);
  std::vector<Block> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, kOpen)) {
      if (std::regex_match(lines[i], kClose)) {
        throw std::runtime_error(fmt::format("{}:{}: '<!-- end table -->' without an opening marker", doc.string(), i + 1));
      }
      continue;
    }
    Block b{{doc, i + 1, m[1].str(), m[2].str()}, i + 1, 0};
    size_t j = i + 1;
    while (j < lines.size() && !std::regex_match(lines[j], kClose)) {
      if (std::regex_match(lines[j], kOpen)) {
        throw std::runtime_error(fmt::format("{}:{}: a table marker inside the table opened at line {}", doc.string(), j + 1, i + 1));
      }
      ++j;
    }
    if (j == lines.size()) {
      throw std::runtime_error(fmt::format("{}:{}: the table is never closed by '<!-- end table -->'", doc.string(), i + 1));
    }
    b.end = j;
    blocks.push_back(b);
    i = j;
  }
  return blocks;
}

std::string joined(const std::vector<std::string>& lines, size_t first, size_t end) {
  std::string text;
  for (size_t k = first; k < end; ++k) text += lines[k] + "\n";
  return text;
}

// "line N: 'doc' vs 'records'" for the first line where the two texts differ.
std::string first_difference(const std::string& doc, const std::string& generated, size_t first_line) {
  std::istringstream a(doc), b(generated);
  std::string la, lb;
  for (size_t n = 0;; ++n) {
    const bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "whitespace";
    if (!ha || !hb || la != lb) {
      return fmt::format("line {}: the doc has '{}', the records give '{}'", first_line + n, ha ? la : "(end of table)",
                         hb ? lb : "(end of table)");
    }
  }
}

}  // namespace

std::vector<DocTable> find_doc_tables(const std::vector<fs::path>& docs) {
  std::vector<DocTable> tables;
  for (const auto& doc : docs) {
    for (const auto& b : blocks_of(doc)) tables.push_back(b.table);
  }
  return tables;
}

std::vector<fs::path> documentation_files(const fs::path& root) {
  std::vector<fs::path> docs;
  if (fs::exists(root / "README.md")) docs.push_back(root / "README.md");
  if (fs::is_directory(root / "docs")) {
    std::vector<fs::path> more;
    for (const auto& entry : fs::directory_iterator(root / "docs")) {
      if (entry.path().extension() == ".md") more.push_back(entry.path());
    }
    std::sort(more.begin(), more.end());
    docs.insert(docs.end(), more.begin(), more.end());
  }
  return docs;
}

DocSync sync_doc_tables(const fs::path& root, const std::vector<fs::path>& docs,
                                         const fs::path& scratch, bool update,
                                         const std::function<void(const fs::path&, const fs::path&)>& plot) {
  DocSync report;
  std::map<std::string, std::string> drawn;  // results folder -> "" or why it could not be drawn
  for (const auto& t : find_doc_tables(docs)) {
    if (drawn.count(t.results)) continue;
    if (!fs::is_directory(root / t.results)) {
      drawn[t.results] = "no such results folder";
      continue;
    }
    try {
      plot(root / t.results, scratch / t.results);
      drawn[t.results] = "";
    } catch (const std::exception& e) {
      drawn[t.results] = e.what();
    }
  }
  for (const auto& doc : docs) {
    auto lines = read_lines(doc);
    const auto blocks = blocks_of(doc);
    bool changed = false;
    // Back to front, so that replacing a block keeps the earlier blocks' line numbers.
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      const auto& t = b->table;
      const std::string where = fmt::format("{}:{}", doc.string(), t.line);
      if (!drawn.at(t.results).empty()) {
        report.problems.push_back(fmt::format("{}: {}: {}", where, t.results, drawn.at(t.results)));
        continue;
      }
      const auto generated_path = scratch / t.results / t.file;
      if (!fs::exists(generated_path)) {
        report.problems.push_back(fmt::format("{}: `pln plot {}` writes no {}", where, t.results, t.file));
        continue;
      }
      const std::string generated = table_text(generated_path), current = joined(lines, b->first, b->end);
      if (generated == current) continue;
      if (update) {
        std::vector<std::string> replacement;
        std::istringstream in(generated);
        for (std::string line; std::getline(in, line);) replacement.push_back(line);
        lines.erase(lines.begin() + static_cast<long>(b->first), lines.begin() + static_cast<long>(b->end));
        lines.insert(lines.begin() + static_cast<long>(b->first), replacement.begin(), replacement.end());
        changed = true;
      } else {
        report.problems.push_back(fmt::format("{}: the table from {}/{} disagrees with its records ({}); "
                                     "`pln docs --update` rewrites it", where, t.results, t.file,
                                     first_difference(current, generated, b->first + 1)));
      }
    }
    if (changed) {
      write_file_atomic(doc, joined(lines, 0, lines.size()));
      report.updated.push_back(doc);
    }
  }
  return report;
}

}  // namespace pln::exp
