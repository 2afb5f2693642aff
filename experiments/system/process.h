#pragma once
// Child processes for grid workers and gnuplot: started with fork/exec, their
// output sent to a log file.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// Starts argv[0] (searched on PATH) with stdout and stderr appended to `log`
/// (truncated first), and `environment` set on top of this process's; the
/// descriptor `inherited` (when >= 0) stays open in it. Throws
/// std::runtime_error when the program cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log,
            const std::vector<std::pair<std::string, std::string>>& environment = {}, int inherited = -1);

/// Waits for `pid` (or any child when pid = -1); returns {pid, exit code},
/// with 128 + signal for a child killed by a signal.
std::pair<pid_t, int> wait_child(pid_t pid = -1);

/// spawn + wait_child.
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& log);

/// This program's own executable, for re-running it as a worker.
std::filesystem::path self_executable();

/// `argv` as one shell command line, each word quoted where needed.
std::string shell_command(const std::vector<std::string>& argv);

/// The most bytes tail_of reads, from the end of the file.
constexpr uint64_t kTailBytes = uint64_t{64} << 10;

/// The last `max_lines` lines within the last kTailBytes of the regular file
/// `path` ("" when it is unreadable, a symbolic link or not a regular file).
std::string tail_of(const std::filesystem::path& path, int max_lines);

}  // namespace pln::exp
