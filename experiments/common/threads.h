#pragma once
// Thread counts for a run. LibTorch's set_num_threads sizes its OpenMP pool
// but not OpenBLAS's own pool, whose idle workers otherwise spin in
// sched_yield beside a one-thread run; both are set here.
// Also what else a run's last bits depend on: the BLAS and its kernels.

#include <string>

namespace pln::exp {

/// Sets LibTorch's intra-op threads and, when OpenBLAS is loaded, its threads.
void set_threads(int threads);

/// The BLAS behind matrix products as OpenBLAS describes itself, version and
/// kernels in use included (they can change a run's last bits): results are
/// reproducible bit for bit only under the same BLAS kernels.
std::string blas_description();

/// How idle OpenMP workers wait, as the environment set it when the program
/// started: OMP_WAIT_POLICY or GOMP_SPINCOUNT, or "default" (they spin a
/// while). It changed two-thread runs' speed up to 2.5x here (README, `--threads`).
std::string openmp_wait_policy();

/// Keeps freed memory in the heap instead of returning large blocks to the
/// system, so each training step's tensors do not page-fault afresh.
void keep_freed_memory();

}  // namespace pln::exp
