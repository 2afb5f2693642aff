#include "records/run_state.h"

#include "system/atomic_file.h"
#include "records/json.h"
#include "spec/config.h"
#include "system/printable.h"
#include "system/process.h"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

const char* kMarker = "running.json";

std::string this_host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

// Whether `pid` is alive and is the run of `run_dir` (its command line names
// the directory), so that a recycled pid does not pass for the run.
bool runs_here(long pid, const fs::path& run_dir) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  if (!in) return false;
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& c : cmdline) c = c == '\0' ? ' ' : c;
  return cmdline.find(run_dir.filename().string()) != std::string::npos;
}

std::string without_line_end(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

RunningMarker::RunningMarker(fs::path run_dir) : path_(std::move(run_dir) / kMarker) {
  const auto now = std::time(nullptr);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
  const Config marker = {{"host", this_host()}, {"pid", static_cast<long>(::getpid())}, {"started", started}};
  write_file_atomic(path_, marker.dump() + "\n");
}

RunningMarker::~RunningMarker() {
  std::error_code ignored;
  fs::remove(path_, ignored);
}

CellStatus cell_status(const fs::path& run_dir, bool finished) {
  if (finished) return {CellState::kDone, ""};
  if (fs::exists(run_dir / kMarker)) {
    try {
      const auto marker = read_json_file(run_dir / kMarker);
      const auto host = marker.at("host").get<std::string>();
      const long pid = marker.at("pid").get<long>();
      // running.json may come from anyone: its text is printed escaped.
      const auto detail = fmt::format("on {}, pid {}, since {}", printable(host), pid,
                                      printable(marker.at("started").get<std::string>()));
      if (host != this_host()) return {CellState::kRunning, detail};
      if (runs_here(pid, run_dir)) return {CellState::kRunning, detail};
      return {CellState::kPending, "interrupted (its process " + std::to_string(pid) + " is gone)"};
    } catch (const std::exception&) {
      return {CellState::kPending, "interrupted (unreadable running.json)"};
    }
  }
  // run.log is read as tail_of reads it: never through a link, its end only.
  if (const auto last = tail_of(run_dir / "run.log", 1); !last.empty()) {
    return {CellState::kFailed, printable(without_line_end(last), true)};
  }
  return {CellState::kPending, ""};
}

const char* to_string(CellState state) {
  switch (state) {
    case CellState::kPending: return "pending";
    case CellState::kRunning: return "running";
    case CellState::kFailed: return "failed";
    case CellState::kDone: return "done";
  }
  return "?";
}

}  // namespace pln::exp
