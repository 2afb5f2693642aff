#pragma once
// Writes that never leave a torn file: content goes to a temporary file in the
// target's directory, is flushed, then renamed over the target.

#include <filesystem>
#include <string>

namespace pln::exp {

/// Replaces `path` with `content` atomically; throws std::runtime_error naming
/// the path and the system error on failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace pln::exp
