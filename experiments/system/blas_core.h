#pragma once
// OpenBLAS built with DYNAMIC_ARCH picks its kernels by the CPU's family and
// model, and a release that does not know a newer CPU falls back to its
// oldest x86-64 kernels (Prescott: SSE3) even where the CPU has AVX-512, at a
// fraction of the speed of every matrix product. pln notices such a choice,
// and starts itself again (system/start_up.h) with OPENBLAS_CORETYPE naming the
// kernels the CPU's instruction set supports; a user's own OPENBLAS_CORETYPE
// always wins.

#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// Instruction-set tiers, in the order OpenBLAS's x86-64 kernels use them.
enum class VectorTier { kUnknown = 0, kSse = 1, kAvx = 2, kAvx2 = 3, kAvx512 = 4 };

const char* to_string(VectorTier tier);

/// The tier of an OpenBLAS core name (as openblas_get_corename or
/// OPENBLAS_CORETYPE spell it, any case); kUnknown for names it does not list.
VectorTier openblas_core_tier(const std::string& core);

/// The highest tier this CPU and its operating system support; kUnknown on
/// another architecture than x86-64 (whose OpenBLAS cores have no such tiers).
VectorTier cpu_tier();

/// The OpenBLAS core whose kernels use `tier` (SkylakeX, Haswell,
/// Sandybridge), or "" below AVX.
std::string openblas_core_for(VectorTier tier);

/// What to do about OpenBLAS's choice: `replacement` is the core to set
/// (empty: keep it); `note` says what was seen ("" when nothing is amiss).
struct BlasCoreVerdict {
  std::string replacement;
  std::string note;
};

/// Judges OpenBLAS's core `chosen` on a CPU of tier `cpu`. `user_coretype`
/// is OPENBLAS_CORETYPE as the user set it (null when unset), `replaced`
/// the core OpenBLAS had chosen before pln set OPENBLAS_CORETYPE (null when
/// it did not). Kernels two or more tiers below the CPU are replaced, unless
/// the user chose them.
BlasCoreVerdict judge_blas_core(const std::string& chosen, VectorTier cpu, const char* user_coretype,
                                const char* replaced);

/// OpenBLAS's core in this process ("" when the BLAS is not OpenBLAS).
std::string openblas_core();

/// The verdict on this process's BLAS, for the run's log and config.json.
BlasCoreVerdict blas_core_verdict();

/// The environment that gives a new process the CPU's kernels where
/// OpenBLAS's are two or more tiers below the CPU and the user has not chosen
/// them: OPENBLAS_CORETYPE, and beside it the core OpenBLAS had chosen (for
/// the note); empty when OpenBLAS's choice stands. system/start_up.h starts the
/// program again with it.
std::vector<std::pair<std::string, std::string>> blas_core_environment();

}  // namespace pln::exp
