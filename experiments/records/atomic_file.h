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

/// The file's bytes; throws std::runtime_error naming the path when it cannot be opened.
std::string read_text(const std::filesystem::path& path);

}  // namespace pln::exp
