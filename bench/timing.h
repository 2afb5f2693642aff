#pragma once
// The benchmarks' one clock and timing loop.

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <vector>

namespace pln::bench {

// Whether timings read the process's CPU time rather than the wall clock
// (false). The CPU time leaves out the time other jobs held the core on a
// shared machine, where even the wall clock's minimum over the runs holds
// some of it; it measures the work of one thread only when the caller's
// thread does all of it, so a benchmark offers it where it runs one.
inline bool& cpu_time() {
  static bool on = false;
  return on;
}

// Now, in milliseconds, by the clock cpu_time() picks.
inline double clock_ms() {
  if (cpu_time()) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double elapsed_ms(const std::function<void()>& f) {
  const double start = clock_ms();
  f();
  return clock_ms() - start;
}

// Runs `round` at least `reps` times, and more while the rounds so far took
// less than budget_ms (up to 5 * reps), so that a quick round is repeated
// long enough for its minimum to show.
inline void run_rounds(int reps, double budget_ms, const std::function<void()>& round) {
  double spent = 0;
  for (int r = 0; r < 5 * reps; ++r) {
    spent += elapsed_ms(round);
    if (r + 1 >= reps && spent >= budget_ms) break;
  }
}

// The minimum time of each of fs, run in turn (f0, f1, ..., f0, f1, ...) so
// that their ratios come from the same stretch of time: the memory bandwidth
// of a shared machine drifts between seconds, which separate loops would read
// as a difference between the functions. One warm-up round (first-touch
// allocations, thread pool start), then the rounds of run_rounds.
inline std::vector<double> min_ms(const std::vector<std::function<void()>>& fs, int reps,
                                  double budget_ms = 0) {
  for (const auto& f : fs) f();
  std::vector<double> best(fs.size(), 1e300);
  run_rounds(reps, budget_ms, [&] {
    for (size_t i = 0; i < fs.size(); ++i) best[i] = std::min(best[i], elapsed_ms(fs[i]));
  });
  return best;
}

}  // namespace pln::bench
