#pragma once
// What a run's records say produced them (config.json, provenance.json): the
// source revision, the machine, the BLAS and its kernels, how idle OpenMP
// workers wait. Results are reproducible bit for bit only where these match.

#include <string>

namespace pln::exp {

/// `git describe --always --dirty` of the checkout this program was built
/// from, taken when it was built (not when it runs); "unknown" outside a checkout.
std::string source_revision();

/// "model name, N cores, M GiB" of this machine, from /proc (or "unknown").
std::string machine_description();

/// The BLAS behind matrix products as OpenBLAS describes itself, version and
/// kernels in use included (they can change a run's last bits): results are
/// reproducible bit for bit only under the same BLAS kernels.
std::string blas_description();

/// How idle OpenMP workers wait, as the environment set it when the program
/// started: OMP_WAIT_POLICY or GOMP_SPINCOUNT, or "default" (they spin a
/// while). It changed two-thread runs' speed up to 2.5x here (README, `--threads`).
std::string openmp_wait_policy();

}  // namespace pln::exp
