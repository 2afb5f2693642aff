#pragma once
// Whole files: writes that never leave a torn file (content goes to a
// temporary file in the target's directory, is flushed, then renamed over the
// target), and reading one back.

#include <filesystem>
#include <string>

namespace pln::exp {

/// Replaces `path` with `content` atomically; throws std::runtime_error naming
/// the path and the system error on failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

/// The file's bytes; throws std::runtime_error naming the path when it cannot
/// be opened or is not a regular file (a directory, a FIFO that would block).
std::string read_text(const std::filesystem::path& path);

/// Throws std::invalid_argument naming `what` when `path` holds a control
/// character (a newline in --out would split the lines of grid.slurm and
/// cells.txt, and of every record that names the path).
void refuse_control_characters(const std::filesystem::path& path, const std::string& what);

/// Removes the temporary files write_file_atomic leaves in `dir` when its
/// process is killed between creating and renaming one (`.NAME.XXXXXX`);
/// call it only while holding the directory (its run's claim).
void remove_stale_temporaries(const std::filesystem::path& dir);

/// `root / relative` for a relative path read from a record (a cell's name, a
/// figure's input), when it stays inside `root`: not absolute, no `..`, no
/// control character, and no symbolic link on the way that leads out of
/// `root`. Otherwise throws std::runtime_error naming `source` and the path:
/// records come from anyone, and a path in them must not reach other files.
std::filesystem::path path_inside(const std::filesystem::path& root, const std::string& relative,
                                  const std::string& source);

}  // namespace pln::exp
