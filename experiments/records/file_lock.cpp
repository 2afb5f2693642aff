#include "records/file_lock.h"

#include "records/run_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pln::exp {

namespace {

int open_lock_file(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == ELOOP) {
    throw std::runtime_error("lock file " + path.string() + " is a symbolic link; refused (pln follows none inside a "
                             "run or grid directory)");
  }
  if (fd < 0) throw std::runtime_error("cannot open lock file " + path.string() + ": " + std::strerror(errno));
  return fd;
}

int lock(int fd, int operation) {
  int rc;
  do {
    rc = ::flock(fd, operation);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? 0 : errno;
}

}  // namespace

FileLock FileLock::wait_for(const std::filesystem::path& path) {
  const int fd = open_lock_file(path);
  if (const int err = lock(fd, LOCK_EX); err != 0) {
    ::close(fd);
    throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
  }
  return FileLock(fd);
}

FileLock FileLock::wait_for_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open the folder " + dir.string() + ": " + std::strerror(errno));
  if (const int err = lock(fd, LOCK_EX); err != 0) {
    ::close(fd);
    throw std::runtime_error("cannot lock the folder " + dir.string() + ": " + std::strerror(err));
  }
  return FileLock(fd);
}

std::optional<FileLock> FileLock::try_take(const std::filesystem::path& path) {
  const int fd = open_lock_file(path);
  const int err = lock(fd, LOCK_EX | LOCK_NB);
  if (err == 0) return FileLock(fd);
  ::close(fd);
  if (err == EWOULDBLOCK) return std::nullopt;
  throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
}

std::optional<FileLock> FileLock::adopt(const std::filesystem::path& path, int fd) {
  struct stat held {}, named {};
  if (fd < 0 || ::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0) return std::nullopt;
  if (held.st_dev != named.st_dev || held.st_ino != named.st_ino) return std::nullopt;
  // The handed-over file already holds the lock; taking it again through the
  // same open file succeeds, and fails if the parent held none.
  if (lock(fd, LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return FileLock(fd);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::filesystem::path claim_file(const std::filesystem::path& run_dir) { return run_dir / "running.lock"; }

FileLock claim_run(const std::filesystem::path& run_dir) {
  const auto file = claim_file(run_dir);
  if (const char* handed = std::getenv(kRunClaimVariable); handed != nullptr && *handed != '\0') {
    char* end = nullptr;
    const long fd = std::strtol(handed, &end, 10);
    ::unsetenv(kRunClaimVariable);  // not for this run's own children
    if (end != handed && *end == '\0') {
      if (auto adopted = FileLock::adopt(file, static_cast<int>(fd))) return std::move(*adopted);
    }
  }
  if (auto taken = FileLock::try_take(file)) return std::move(*taken);
  const CellStatus holder = cell_status(run_dir, false);
  throw RunClaimed(run_dir.string() + " is being run by another process" +
                   (holder.state == CellState::kRunning ? " (" + holder.detail + ")" : std::string()) +
                   "; a run directory takes one process at a time, and this one is left to it");
}

}  // namespace pln::exp
