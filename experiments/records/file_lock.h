#pragma once
// Exclusive advisory locks on files (flock), for processes that share a
// directory: two grids on one output directory, a grid beside a resubmitted
// Slurm array. A lock belongs to its open file, so it is released when the
// last process holding that file closes it, a killed one included; a launcher
// can take a run's lock and hand it to the worker it starts.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace pln::exp {

class FileLock {
 public:
  /// Waits for the lock on `path` (created if missing).
  static FileLock wait_for(const std::filesystem::path& path);
  /// Waits for the lock on the directory `dir` itself, which leaves no lock
  /// file behind: for a writer that swaps a folder inside `dir` by renaming.
  static FileLock wait_for_directory(const std::filesystem::path& dir);
  /// The lock on `path` if no other process holds it now.
  static std::optional<FileLock> try_take(const std::filesystem::path& path);
  /// The lock that a parent took on `path` and handed to this process as file
  /// descriptor `fd` (see `hand_over`), or nullopt when `fd` is not that file.
  static std::optional<FileLock> adopt(const std::filesystem::path& path, int fd);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  /// Closes this process's handle: the lock lasts while a child holds it.
  ~FileLock();

  /// The descriptor to leave open in a child that is to hold the lock.
  int descriptor() const { return fd_; }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

/// Thrown when a run directory is claimed by another live process.
class RunClaimed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The exit status of `pln <experiment>` when its --out directory is claimed
/// by another process (EX_TEMPFAIL): the cell is left to that process.
constexpr int kExitRunClaimed = 75;

/// The environment variable through which a launcher hands a run's claim (a
/// file descriptor) to the worker it starts.
constexpr const char* kRunClaimVariable = "PLN_RUN_CLAIM_FD";

/// The lock file of a run directory.
std::filesystem::path claim_file(const std::filesystem::path& run_dir);

/// This process's claim on `run_dir`: the one its launcher handed over, or a
/// new one. Throws RunClaimed, naming the holder, when another process holds it.
FileLock claim_run(const std::filesystem::path& run_dir);

}  // namespace pln::exp
