#pragma once
// A run's thread pools and heap. LibTorch's set_num_threads sizes its OpenMP
// pool but not OpenBLAS's own pool, whose idle workers otherwise spin in
// sched_yield beside a one-thread run; both are set here. What the BLAS and
// OpenMP are, for the records, is in provenance.h.

#include <string>

namespace pln::exp {

/// Sets LibTorch's intra-op threads and, when OpenBLAS is loaded, its threads.
void set_threads(int threads);

/// Keeps freed memory in the heap instead of returning large blocks to the
/// system, so each training step's tensors do not page-fault afresh.
void keep_freed_memory();

}  // namespace pln::exp
