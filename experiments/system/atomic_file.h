#pragma once
// Whole files: writes that never leave a torn file (content goes to a
// temporary file in the target's directory, is flushed, then renamed over the
// target), and reading one back.

#include <cstdint>
#include <filesystem>
#include <string>

namespace pln::exp {

/// Replaces `path` with `content` atomically, relative to a descriptor of
/// its folder (Directory::write_atomic): the temporary and the rename land
/// in the same folder, and a link planted as `path` is replaced, never
/// written through. Throws std::runtime_error naming the path and the system
/// error on failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

/// A fresh, empty temporary file beside `target`, open for writing as `fd`:
/// `.pln-tmp.NAME.XXXXXX` in the target's folder, made with O_EXCL and
/// O_NOFOLLOW (Directory::create_temporary), so that a file or symbolic link
/// planted under any name is never written through. A writer fills it
/// (itself, or a program given `path`) and renames it over `target`. Throws
/// std::runtime_error naming `target` when it cannot be made.
struct TemporaryFile {
  std::filesystem::path path;
  int fd = -1;
};
TemporaryFile create_temporary_beside(const std::filesystem::path& target);

/// The file's bytes; throws std::runtime_error naming the path when it cannot
/// be opened or is not a regular file (a directory, a FIFO that would block).
std::string read_text(const std::filesystem::path& path);

/// The bytes of the regular file `path`, opened relative to a descriptor of
/// its folder without following a symbolic link (Directory::read_regular)
/// and without blocking on a FIFO; throws
/// std::runtime_error naming the path when it is a link, not a regular file,
/// larger than `max_bytes` (checked before anything is read) or unreadable.
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes);

/// The last `max_bytes` bytes (or fewer) of the regular file `path`, opened as
/// read_regular_file opens it; throws as it does for a link, a file that is
/// not regular or one that cannot be read. For logs of any length.
std::string read_regular_file_tail(const std::filesystem::path& path, uint64_t max_bytes);

/// Throws std::runtime_error naming `what` and `path` when `path` itself is a
/// symbolic link (one planted in a run or grid directory would send what pln
/// writes there elsewhere).
void refuse_symbolic_link(const std::filesystem::path& path, const std::string& what);

/// Throws std::invalid_argument naming `what` when `path` holds a control
/// character (a newline in --out would split the lines of grid.slurm and
/// cells.txt, and of every record that names the path).
void refuse_control_characters(const std::filesystem::path& path, const std::string& what);

/// The prefix of write_file_atomic's temporary files: pln's own, so that
/// clearing them never touches a user's dot file.
inline constexpr const char* kTemporaryPrefix = ".pln-tmp.";

/// Removes the temporary files write_file_atomic leaves in `dir` when its
/// process is killed between creating and renaming one
/// (`.pln-tmp.NAME.XXXXXX`, regular files only); call it only while holding
/// the directory (its run's claim).
void remove_stale_temporaries(const std::filesystem::path& dir);

/// Removes `path` (a scratch file or folder, with all it holds) when it goes
/// out of scope, however the scope is left: what a step that failed half-way
/// leaves behind is never taken for a result.
class RemovedOnExit {
 public:
  explicit RemovedOnExit(std::filesystem::path path) : path_(std::move(path)) {}
  RemovedOnExit(const RemovedOnExit&) = delete;
  RemovedOnExit& operator=(const RemovedOnExit&) = delete;
  ~RemovedOnExit() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

/// `root / relative` for a relative path read from a record (a cell's name, a
/// figure's input), when it stays inside `root`: not absolute, no `..`, no
/// control character, and no symbolic link on the way that leads out of
/// `root`. Otherwise throws std::runtime_error naming `source` and the path:
/// records come from anyone, and a path in them must not reach other files.
std::filesystem::path path_inside(const std::filesystem::path& root, const std::string& relative,
                                  const std::string& source);

}  // namespace pln::exp
