#include "system/atomic_file.h"

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
[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}
}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::filesystem::create_directories(dir);
  std::string tmpl = (dir / (kTemporaryPrefix + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail("cannot create a temporary file for", path);
  // mkstemp makes the file private (0600); results get the usual mode under the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(tmpl.c_str());
      fail("cannot write", path);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    fail("cannot flush", path);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    ::unlink(tmpl.c_str());
    fail("cannot rename into place", path);
  }
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw std::runtime_error(path.string() + ": a symbolic link, not a file pln wrote; refused");
    fail("cannot open", path);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    fail("cannot read", path);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": not a regular file");
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": " + std::to_string(info.st_size) + " bytes, more than the " +
                             std::to_string(max_bytes) + " it can hold");
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);  // a file that shrank while read is read as it now is
  return bytes;
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
    std::string shown;
    for (char c : relative) shown += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    throw std::runtime_error(source + ": the path '" + shown + "' " + why + "; refused");
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
