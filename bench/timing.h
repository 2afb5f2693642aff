#pragma once
// The benchmarks' one timing loop.

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace pln::bench {

inline double elapsed_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The minimum time of each of fs, run in turn (f0, f1, ..., f0, f1, ...) so
// that their ratios come from the same stretch of time: the memory bandwidth
// of a shared machine drifts between seconds, which separate loops would read
// as a difference between the functions. One warm-up round (first-touch
// allocations, thread pool start), then at least `reps` rounds, more while
// the rounds so far took less than budget_ms (up to 5 * reps).
inline std::vector<double> min_ms(const std::vector<std::function<void()>>& fs, int reps,
                                  double budget_ms = 0) {
  for (const auto& f : fs) f();
  std::vector<double> best(fs.size(), 1e300);
  double spent = 0;
  for (int r = 0; r < 5 * reps; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      const double ms = elapsed_ms(fs[i]);
      best[i] = std::min(best[i], ms);
      spent += ms;
    }
    if (r + 1 >= reps && spent >= budget_ms) break;
  }
  return best;
}

}  // namespace pln::bench
