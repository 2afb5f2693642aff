#include "sweep/launchers.h"

#include "records/file_lock.h"
#include "sweep/gpu_slots.h"
#include "system/atomic_file.h"
#include "system/process.h"

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>

namespace pln::exp {

namespace {

// A grid stopped by a signal to its own process (kill PID, not the group)
// passes the signal to its workers, so that none outlives it and goes on
// writing into cells the next grid takes for its own. The handler reads the
// workers' pids from lock-free atomics, which a signal handler may.
std::atomic<pid_t>* g_workers = nullptr;
size_t g_worker_slots = 0;
volatile sig_atomic_t g_stop_signal = 0;

void forward_to_workers(int signal) {
  g_stop_signal = signal;
  for (size_t i = 0; i < g_worker_slots; ++i) {
    if (const pid_t pid = g_workers[i].load(); pid > 0) ::kill(pid, signal);
  }
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The handlers for the launcher's lifetime, the earlier ones back after it.
class ForwardSignals {
 public:
  explicit ForwardSignals(size_t slots) : workers_(new std::atomic<pid_t>[slots]) {
    for (size_t i = 0; i < slots; ++i) workers_[i] = 0;
    g_workers = workers_.get();
    g_worker_slots = slots;
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = forward_to_workers;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      ::sigaction(kForwardedSignals[i], nullptr, &previous_[i]);
      // A signal the grid was started ignoring (nohup, a background job's
      // SIGINT) stays ignored, by the grid and by its workers.
      if (previous_[i].sa_handler != SIG_IGN) ::sigaction(kForwardedSignals[i], &action, nullptr);
    }
  }
  ~ForwardSignals() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) ::sigaction(kForwardedSignals[i], &previous_[i], nullptr);
    g_worker_slots = 0;
    g_workers = nullptr;
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

  /// Records `pid` in a free slot; a signal that came before it is passed on now.
  void add(pid_t pid) {
    for (size_t i = 0; i < g_worker_slots; ++i) {
      pid_t free = 0;
      if (workers_[i].compare_exchange_strong(free, pid)) break;
    }
    if (g_stop_signal != 0) ::kill(pid, g_stop_signal);
  }
  void remove(pid_t pid) {
    for (size_t i = 0; i < g_worker_slots; ++i) {
      pid_t held = pid;
      if (workers_[i].compare_exchange_strong(held, 0)) break;
    }
  }
  /// The signal that stopped the grid, 0 while none has.
  int stop_signal() const { return g_stop_signal; }

 private:
  std::unique_ptr<std::atomic<pid_t>[]> workers_;
  struct sigaction previous_[std::size(kForwardedSignals)] {};
};

}  // namespace

int launch_local(const Sweep& sweep, int jobs) {
  const auto& pending = sweep.pending;
  const auto& out = sweep.out;
  // Cells running in another process are not done: the records will not hold them yet.
  fmt::print("pln grid {} --preset {}: {} cells, {} done, {} to run; {} job(s) x {} thread(s); out {}\n",
             sweep.experiment->name, sweep.grid, sweep.cells.size(),
             sweep.cells.size() - pending.size() - sweep.running_elsewhere, pending.size(), jobs, sweep.threads,
             out.string());
  GpuSlots gpus = sweep.on_cuda ? GpuSlots::visible() : GpuSlots(0, nullptr);
  if (sweep.on_cuda) fmt::print("cells on device 'cuda' spread over {} visible GPU(s)\n", gpus.count());
  std::fflush(stdout);
  sweep.write_records();
  std::map<pid_t, const GridCell*> running;
  std::map<pid_t, int> gpu_of;
  size_t next = 0, finished = 0, elsewhere = 0;
  int failed = 0;
  // Workers must not outlive a grid that stops on an error.
  struct StopWorkers {
    std::map<pid_t, const GridCell*>& running;
    ~StopWorkers() {
      for (const auto& [pid, cell] : running) ::kill(pid, SIGTERM);
      for (const auto& [pid, cell] : running) ::waitpid(pid, nullptr, 0);
    }
  } stop_workers{running};
  ForwardSignals signals(static_cast<size_t>(jobs));
  while ((next < pending.size() && signals.stop_signal() == 0) || !running.empty()) {
    while (next < pending.size() && static_cast<int>(running.size()) < jobs && signals.stop_signal() == 0) {
      const auto* cell = pending[next++];
      // The cell is claimed here and the claim handed to its worker, so that
      // another grid on this directory neither runs it at the same time nor
      // again once it is done; its own run.log is not touched.
      refuse_symbolic_link(out / cell->id, "cell");
      auto claim = FileLock::try_take(claim_file(out / cell->id));
      if (!claim || sweep.is_done(*cell)) {
        ++finished;
        ++elsewhere;
        fmt::print("[{}/{}] {} {} another process\n", finished, pending.size(), cell->id,
                   claim ? "was finished by" : "is running in");
        std::fflush(stdout);
        continue;
      }
      auto argv = sweep.command(*cell);
      argv[0] = "/proc/self/exe";  // this very binary, even if rebuilt while the grid runs
      const int gpu = sweep.device_of.at(cell->id) == "cuda" ? gpus.take() : -1;  // -1: none (cpu, or cuda:N as given)
      auto environment = gpus.environment(gpu);
      environment.emplace_back(kRunClaimVariable, std::to_string(claim->descriptor()));
      const pid_t pid = spawn(argv, out / cell->id / "run.log", environment, claim->descriptor());
      running[pid] = cell;
      gpu_of[pid] = gpu;
      signals.add(pid);
    }
    if (running.empty()) break;
    const auto [pid, code] = wait_child(-1);
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    signals.remove(pid);
    gpus.give_back(gpu_of[pid]);
    gpu_of.erase(pid);
    const auto* cell = it->second;
    running.erase(it);
    ++finished;
    const bool ok = code == 0 && std::filesystem::exists(out / cell->id / "summary.json");
    if (code == kExitRunClaimed) {
      ++elsewhere;
      fmt::print("[{}/{}] {} is running in another process\n", finished, pending.size(), cell->id);
    } else if (ok) {
      sweep.write_records();
      fmt::print("[{}/{}] {} done\n", finished, pending.size(), cell->id);
    } else if (signals.stop_signal() != 0) {
      fmt::print("[{}/{}] {} stopped by signal {}\n", finished, pending.size(), cell->id, signals.stop_signal());
    } else {
      ++failed;
      fmt::print("[{}/{}] {} FAILED (exit {}); last lines of its run.log:\n{}", finished,
                 pending.size(), cell->id, code, tail_of(out / cell->id / "run.log", 8));
    }
    std::fflush(stdout);
  }
  const size_t records = sweep.write_records();
  fmt::print("records: {} ({} of {} cells)\n", (out / "records.csv").string(), records,
             sweep.cells.size());
  if (elsewhere > 0 || sweep.running_elsewhere > 0) {
    fmt::print("{} cell(s) were left to another process; rerun `pln grid` when it has finished them to add "
               "them to the records\n", elsewhere + sweep.running_elsewhere);
  }
  if (const int signal = signals.stop_signal(); signal != 0) {
    // The records hold what finished; the grid then ends as the signal asked.
    std::fflush(stdout);
    ::signal(signal, SIG_DFL);
    ::raise(signal);
  }
  return failed;
}

}  // namespace pln::exp
