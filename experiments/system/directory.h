#pragma once
// A folder held open: files in it are created, read and renamed relative to
// its descriptor (openat, renameat), each with O_NOFOLLOW, so that a file's
// temporary copy and its rename land in the same folder even if the folder's
// path is swapped while pln works, and no symbolic link planted under a
// file's name is ever followed.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace pln::exp {

class Directory {
 public:
  /// Opens the folder `path`, following links on the way (a folder named on
  /// the command line may be one); throws std::runtime_error naming it (or
  /// `for_file`, the file it is opened for, when given) when it is not a
  /// folder or cannot be opened.
  explicit Directory(const std::filesystem::path& path, const std::filesystem::path& for_file = {});
  Directory(Directory&& other) noexcept;
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory();

  /// The sub-folder `name` (one component), opened without following a
  /// link: a link planted in its place is refused by name.
  Directory open_directory(const std::string& name) const;

  /// A fresh, empty file `.pln-tmp.NAME.XXXXXX` in this folder (O_CREAT |
  /// O_EXCL | O_NOFOLLOW: nothing planted under any name is reused), open for
  /// writing: its descriptor and its name.
  std::pair<int, std::string> create_temporary(const std::string& name) const;

  /// Replaces `name` with `content` atomically: a fresh temporary
  /// `.pln-tmp.NAME.XXXXXX` (O_CREAT | O_EXCL | O_NOFOLLOW), written, flushed
  /// and renamed over `name` in this folder. A link planted as `name` is
  /// replaced, never written through. Throws std::runtime_error naming the
  /// file and the system error.
  void write_atomic(const std::string& name, const std::string& content) const;

  /// `name`'s bytes: a regular file, opened without following a link and
  /// without blocking on a FIFO, of at most `max_bytes` (checked before
  /// anything is read); or, with `tail`, its last `max_bytes` at most.
  /// Throws std::runtime_error naming the file otherwise.
  std::string read_regular(const std::string& name, uint64_t max_bytes, bool tail = false) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  Directory(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace pln::exp
