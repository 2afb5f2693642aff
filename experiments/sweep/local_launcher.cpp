#include "sweep/launchers.h"

#include "records/file_lock.h"
#include "sweep/gpu_slots.h"
#include "sweep/process.h"

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>

namespace pln::exp {

int launch_local(const Sweep& sweep, int jobs) {
  const auto& pending = sweep.pending;
  const auto& out = sweep.out;
  fmt::print("pln grid {} --preset {}: {} cells, {} done, {} to run; {} job(s) x {} thread(s); out {}\n",
             sweep.experiment->name, sweep.grid, sweep.cells.size(), sweep.cells.size() - pending.size(),
             pending.size(), jobs, sweep.threads, out.string());
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
  while (next < pending.size() || !running.empty()) {
    while (next < pending.size() && static_cast<int>(running.size()) < jobs) {
      const auto* cell = pending[next++];
      // The cell is claimed here and the claim handed to its worker, so that
      // another grid on this directory neither runs it at the same time nor
      // again once it is done; its own run.log is not touched.
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
    }
    if (running.empty()) break;
    const auto [pid, code] = wait_child(-1);
    const auto it = running.find(pid);
    if (it == running.end()) continue;
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
  if (elsewhere > 0) fmt::print("{} cell(s) were left to another process\n", elsewhere);
  return failed;
}

}  // namespace pln::exp
