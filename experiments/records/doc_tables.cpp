#include "records/doc_tables.h"

#include "system/atomic_file.h"
#include "system/printable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kOpenStart = "<!-- table ", kMarkerEnd = " -->", kClose = "<!-- end table -->";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A marker's path, as a doc may name one: relative, in a fixed alphabet
// (letters, digits, '.', '_', '-' and, for the folder, '/'), with no empty,
// '.' or '..' component: a doc's marker cannot reach outside the repository.
bool marker_path(std::string_view path, bool folder) {
  if (path.empty() || path.front() == '/' || path.back() == '/') return false;
  for (const char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
    if (!plain && !(folder && c == '/')) return false;
  }
  for (size_t at = 0; at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const auto part = path.substr(at, slash - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = slash + 1;
  }
  return true;
}

// "<!-- table FOLDER FILE -->": its two words, or nullopt for any other line.
std::optional<std::pair<std::string, std::string>> open_marker(const std::string& line) {
  if (line.size() < kOpenStart.size() + kMarkerEnd.size() || line.compare(0, kOpenStart.size(), kOpenStart) != 0 ||
      line.compare(line.size() - kMarkerEnd.size(), kMarkerEnd.size(), kMarkerEnd) != 0) {
    return std::nullopt;
  }
  const std::string words = line.substr(kOpenStart.size(), line.size() - kOpenStart.size() - kMarkerEnd.size());
  const size_t space = words.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == words.size()) return std::nullopt;
  const std::string folder = words.substr(0, space), file = words.substr(space + 1);
  const auto blank = [](const std::string& word) {
    return std::any_of(word.begin(), word.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  };
  if (blank(folder) || blank(file)) return std::nullopt;
  return std::make_pair(folder, file);
}

// A generated table's lines as a block holds them: ending with a newline, and
// with whatever would open or close a marker (a label from a record may hold
// "<!-- end table -->") written as Markdown's entities, which render the same.
std::string table_text(const fs::path& path) {
  std::string s = read_text(path);
  if (!s.empty() && s.back() != '\n') s += '\n';
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 4, "<!--") == 0) out += "&lt;!--", i += 3;
    else if (s.compare(i, 3, "-->") == 0) out += "--&gt;", i += 2;
    else out += s[i];
  }
  return out;
}

struct Block {
  DocTable table;
  size_t first = 0, end = 0;  // 0-based lines of the content: [first, end); `end` is the closing marker
};

std::vector<Block> blocks_in(const std::vector<std::string>& lines, const fs::path& doc) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto marker = open_marker(lines[i]);
    if (!marker) {
      if (lines[i] == kClose) {
        throw std::runtime_error(fmt::format("{}:{}: '<!-- end table -->' without an opening marker", doc.string(), i + 1));
      }
      continue;
    }
    if (!marker_path(marker->first, true) || !marker_path(marker->second, false)) {
      throw std::runtime_error(fmt::format(
          "{}:{}: the table marker names '{}' '{}': a folder under the repository and a file in it, in letters, "
          "digits, '.', '_', '-' (and '/' between the folder's parts), without '..'; refused",
          doc.string(), i + 1, printable(marker->first), printable(marker->second)));
    }
    Block b{{doc, i + 1, marker->first, marker->second}, i + 1, 0};
    size_t j = i + 1;
    while (j < lines.size() && lines[j] != kClose) {
      if (open_marker(lines[j])) {
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

std::vector<Block> blocks_of(const fs::path& doc) { return blocks_in(lines_of(read_text(doc)), doc); }

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

std::vector<DocTable> parse_doc_tables(const std::string& text, const fs::path& doc) {
  std::vector<DocTable> tables;
  for (const auto& b : blocks_in(lines_of(text), doc)) tables.push_back(b.table);
  return tables;
}

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
    try {
      // A symbolic link on the way must not lead out of the repository either.
      const fs::path folder = path_inside(root, t.results, fmt::format("{}:{}", t.doc.string(), t.line));
      if (!fs::is_directory(folder)) {
        drawn[t.results] = "no such results folder";
        continue;
      }
      plot(folder, scratch / t.results);
      drawn[t.results] = "";
    } catch (const std::exception& e) {
      drawn[t.results] = e.what();
    }
  }
  for (const auto& doc : docs) {
    auto lines = lines_of(read_text(doc));
    const auto blocks = blocks_in(lines, doc);
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
