#pragma once
// The CPU kernels' one door to LibTorch's intra-op thread pool: through its
// C++ API in the library (libpln), or through the stable ABI's C shim in the
// build of the Python package that serves every torch (PLN_STABLE_ABI, see
// src/stable/). The kernels' results are the same, bit for bit, either way:
// both reach the same at::parallel_for, and a kernel that keeps partial sums
// a task takes its tasks from parallel_tasks, whose split is its own.

#include <algorithm>
#include <cstdint>

#if PLN_STABLE_ABI
#include <torch/csrc/stable/ops.h>
#else
#include <ATen/Parallel.h>
#endif

namespace pln::cpu {

#if PLN_STABLE_ABI
inline int64_t num_threads() { return static_cast<int64_t>(torch::stable::get_num_threads()); }
// The stable ABI cannot tell; the package calls the kernels from the operators
// only, outside any parallel region. A kernel called inside one would still
// compute the same bits: nested loops run inline, and splits_groups' choice
// changes the route, not the result.
inline bool in_parallel_region() { return false; }
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  torch::stable::parallel_for(begin, end, grain, f);
}
#else
inline int64_t num_threads() { return at::get_num_threads(); }
inline bool in_parallel_region() { return at::in_parallel_region(); }
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  at::parallel_for(begin, end, grain, f);
}
#endif

/// How many tasks parallel_tasks splits n iterations into: one where the loop
/// runs inline, else at most num_threads(), each of at least `grain`.
inline int64_t task_count(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  const int64_t threads = num_threads();
  if (n <= grain || n == 1 || threads <= 1 || in_parallel_region()) return 1;
  return std::min(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
}

/// f(task, first, last) for the runs of [begin, end), task numbering them from
/// 0 (below task_count): the split of LibTorch's OpenMP parallel_for (equal
/// runs, one a thread), made here so that a kernel can keep its partial sums
/// a task, in the order of the tasks.
template <typename F>
void parallel_tasks(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin, tasks = task_count(n, grain);
  if (tasks == 0) return;
  const int64_t run = (n + tasks - 1) / tasks;
  parallel_for(0, tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t from = begin + t * run;
      if (from < end) f(t, from, std::min(end, from + run));
    }
  });
}

}  // namespace pln::cpu
