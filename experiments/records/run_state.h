#pragma once
// What a run directory says about its run, read from the directory alone (no
// scheduler is asked): a run writes `running.json` (host, pid, start time)
// when it starts and removes it when it stops, having written summary.json or
// not. A run killed outright (SIGKILL, a node lost) leaves the marker behind;
// on the host it names, a marker whose process is gone reads as interrupted.

#include <filesystem>
#include <string>

namespace pln::exp {

/// Marks `run_dir` as running in this process for the object's lifetime.
class RunningMarker {
 public:
  explicit RunningMarker(std::filesystem::path run_dir);
  ~RunningMarker();
  RunningMarker(const RunningMarker&) = delete;
  RunningMarker& operator=(const RunningMarker&) = delete;

 private:
  std::filesystem::path path_;
};

enum class CellState {
  kPending,      ///< never started, or interrupted (its process is gone)
  kRunning,      ///< a live process on this host, or a marker of another host
  kFailed,       ///< stopped with an error: a log, no summary, no marker
  kDone,         ///< summary.json
};

struct CellStatus {
  CellState state = CellState::kPending;
  std::string detail;  ///< failed: the log's last line; running: host, pid and start; pending: "interrupted" or ""
};

/// The state of one run directory. `finished` says whether its summary.json
/// counts (the grid's own check of the cell's settings); `log` is its run.log.
CellStatus cell_status(const std::filesystem::path& run_dir, bool finished);

const char* to_string(CellState state);

}  // namespace pln::exp
