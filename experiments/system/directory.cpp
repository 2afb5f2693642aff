#include "system/directory.h"

#include "system/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>

namespace pln::exp {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error = errno) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(error));
}

[[noreturn]] void refuse_link(const std::filesystem::path& path) {
  throw std::runtime_error(path.string() + ": a symbolic link, not a file pln wrote; refused");
}

// mkstemp's six random characters, for a name created relative to a folder
// (there is no mkstempat).
std::string random_suffix() {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 engine{std::random_device{}()};
  std::string out(6, 'x');
  for (auto& c : out) c = kLetters[engine() % (sizeof kLetters - 1)];
  return out;
}

}  // namespace

Directory::Directory(const std::filesystem::path& path, const std::filesystem::path& for_file)
    : path_(path.empty() ? "." : path) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) for_file.empty() ? fail("cannot open the folder", path_) : fail("cannot open", for_file);
}

Directory::Directory(Directory&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

Directory::~Directory() {
  if (fd_ >= 0) ::close(fd_);
}

Directory Directory::open_directory(const std::string& name) const {
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    // O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR or ELOOP.
    struct stat info {};
    if (::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode)) {
      refuse_link(path_ / name);
    }
    fail("cannot open the folder", path_ / name);
  }
  return Directory(fd, path_ / name);
}

std::pair<int, std::string> Directory::create_temporary(const std::string& name) const {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temporary = kTemporaryPrefix + name + "." + random_suffix();
    // 0666: the usual mode under the umask, as any file pln writes.
    const int fd = ::openat(fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return {fd, temporary};
    if (errno != EEXIST) fail("cannot create a temporary file for", path_ / name);
  }
  fail("cannot create a temporary file for", path_ / name, EEXIST);
}

void Directory::write_atomic(const std::string& name, const std::string& content) const {
  const auto target = path_ / name;
  // Named, not a structured binding: the lambda below captures them (C++17).
  const auto created = create_temporary(name);
  const int fd = created.first;
  const std::string& temporary = created.second;
  const auto abandon = [&](const char* what) {
    const int error = errno;
    ::close(fd);
    ::unlinkat(fd_, temporary.c_str(), 0);
    fail(what, target, error);
  };
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("cannot write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("cannot flush");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlinkat(fd_, temporary.c_str(), 0);
    fail("cannot flush", target, error);
  }
  if (::renameat(fd_, temporary.c_str(), fd_, name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(fd_, temporary.c_str(), 0);
    fail("cannot rename into place", target, error);
  }
}

std::string Directory::read_regular(const std::string& name, uint64_t max_bytes, bool tail) const {
  const auto path = path_ / name;
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) refuse_link(path);
    fail("cannot open", path);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail("cannot read", path, error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": not a regular file");
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > max_bytes && !tail) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": " + std::to_string(size) + " bytes, more than the " +
                             std::to_string(max_bytes) + " it can hold");
  }
  const uint64_t length = std::min(size, max_bytes), offset = size - length;
  std::string bytes(static_cast<size_t>(length), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);  // a file that shrank while read is read as it now is
  return bytes;
}

}  // namespace pln::exp
