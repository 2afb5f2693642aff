#include "system/atomic_file.h"

#include "system/directory.h"
#include "system/printable.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <fstream>
#include <sstream>
#include <string_view>

namespace pln::exp {

namespace {

std::filesystem::path folder_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

}  // namespace

TemporaryFile create_temporary_beside(const std::filesystem::path& target) {
  const auto dir = folder_of(target);
  std::filesystem::create_directories(dir);
  const auto [fd, name] = Directory(dir).create_temporary(target.filename().string());
  return {dir / name, fd};
}

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  const auto dir = folder_of(path);
  std::filesystem::create_directories(dir);
  Directory(dir, path).write_atomic(path.filename().string(), content);
}

std::string read_text(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error)) {
    throw std::runtime_error(path.string() + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes) {
  return Directory(folder_of(path), path).read_regular(path.filename().string(), max_bytes);
}

std::string read_regular_file_tail(const std::filesystem::path& path, uint64_t max_bytes) {
  return Directory(folder_of(path), path).read_regular(path.filename().string(), max_bytes, /*tail=*/true);
}

void refuse_symbolic_link(const std::filesystem::path& path, const std::string& what) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    throw std::runtime_error(what + " " + path.string() +
                             " is a symbolic link; pln follows none inside a run or grid directory, so that nothing "
                             "is read or written elsewhere through one: refused");
  }
}

void refuse_control_characters(const std::filesystem::path& path, const std::string& what) {
  for (char c : path.string()) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw std::invalid_argument(what + " holds a control character (a newline, a tab...); refused");
    }
  }
}

void remove_stale_temporaries(const std::filesystem::path& dir) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const auto name = entry.path().filename().string();
    // ".pln-tmp.<target>.XXXXXX", as write_file_atomic names them (mkstemp's
    // six characters), and a regular file: nothing else is pln's to remove.
    const size_t prefix = std::string_view(kTemporaryPrefix).size();
    if (name.size() > prefix + 7 && name.compare(0, prefix, kTemporaryPrefix) == 0 && name[name.size() - 7] == '.' &&
        entry.symlink_status(error).type() == std::filesystem::file_type::regular) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

std::filesystem::path path_inside(const std::filesystem::path& root, const std::string& relative,
                                  const std::string& source) {
  namespace fs = std::filesystem;
  auto refuse = [&](const std::string& why) -> fs::path {
    throw std::runtime_error(source + ": the path '" + printable(relative) + "' " + why + "; refused");
  };
  if (relative.empty()) return refuse("is empty");
  for (char c : relative) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return refuse("holds a control character");
  }
  const fs::path rel(relative);
  if (rel.is_absolute()) return refuse("is absolute, not inside " + root.string());
  for (const auto& part : rel) {
    if (part == "..") return refuse("climbs out of " + root.string() + " (..)");
  }
  // A symbolic link on the way may still lead out: compare the resolved paths.
  const fs::path base = fs::weakly_canonical(root), full = fs::weakly_canonical(root / rel);
  const auto [end, ignored] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (end != base.end()) return refuse("leads out of " + root.string() + " through a symbolic link");
  return root / rel;
}

}  // namespace pln::exp
