#pragma once
// What pln must start with and cannot change once running. Two libraries read
// a setting from the environment as they load, before main:
// - libgomp, how long its workers spin after a parallel region
//   (GOMP_SPINCOUNT): by default 300,000 rounds, on the cores the next matrix
//   product's OpenBLAS workers need, which made a PINN step at two threads
//   slower than at one; a tenth of that keeps the spinning that convolutions'
//   back-to-back regions gain from (docs/command-line.md, Threads);
// - OpenBLAS, which kernels it runs (OPENBLAS_CORETYPE): a release that does
//   not know a newer CPU falls back to its SSE kernels (system/blas_core.h).
// main asks start_settings() what the process lacks and, when anything,
// start_again_with() runs the program once more with all of it: at most one
// re-execution, marked in the environment so that it is never repeated and
// a run's log can say how it started.

#include <string>
#include <vector>

namespace pln::exp {

struct EnvSetting {
  std::string name, value;
};

/// What start_settings() decides from.
struct StartState {
  bool started_again = false;     ///< this process is the re-execution
  bool user_wait_policy = false;  ///< OMP_WAIT_POLICY or GOMP_SPINCOUNT is set
  bool one_thread = false;        ///< the command line asks for --threads 1
  bool one_cpu = false;           ///< the process may run on one CPU only
  /// system/blas_core.h's blas_core_environment(): the OpenBLAS setting to add, if any.
  std::vector<EnvSetting> blas;
};

/// This process's state: its environment, its arguments and its CPU affinity.
/// Takes the mark of a restart out of the environment (kept for how_started()),
/// so that the programs this one starts are not taken for restarts.
StartState start_state(char** argv);

/// The settings to start again with: GOMP_SPINCOUNT=30000 unless the user
/// chose how OpenMP's workers wait, the run is on one thread or one CPU; the
/// OpenBLAS setting where there is one. None in a process started again.
std::vector<EnvSetting> start_settings(const StartState& state);

/// Starts this program again (same arguments) with `settings` added to its
/// environment and the re-execution marked; returns when `settings` is empty
/// or the re-execution fails (the run goes on as it is).
void start_again_with(const std::vector<EnvSetting>& settings, char** argv);

/// For a run's log: "once", or "again with GOMP_SPINCOUNT=30000 ...".
std::string how_started();

}  // namespace pln::exp
