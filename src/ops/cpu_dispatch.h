#pragma once
// The capability whose compilation of the CPU kernels runs (cpu_capability.cpp
// chooses it once) and the one switch from it to its kernels' namespace,
// shared by the files that dispatch: cpu_capability.cpp (Parallel LN and the
// gated norm, in both libraries) and jet_dispatch.cpp (the jets, libpln only).

namespace pln::cpu {

/// Every capability of either architecture; a build holds those of the
/// architecture it targets (CMakeLists.txt's PLN_CPU_CAPABILITIES) and runs
/// the best the CPU supports.
enum class Capability { kBase, kAvx2, kAvx512, kNeon };

/// The best capability this CPU supports, or the one PLN_CPU_CAPABILITY names
/// (an error naming the value if this build or CPU lacks it).
Capability chosen();

}  // namespace pln::cpu

// `return ns::fn(args...)` for the namespace of the chosen capability; chosen()
// returns only capabilities this build holds.
#if PLN_X86_KERNELS
#define PLN_DISPATCH(fn, ...)                                          \
  switch (chosen()) {                                                  \
    case Capability::kAvx512: return avx512::fn(__VA_ARGS__);          \
    case Capability::kAvx2: return avx2::fn(__VA_ARGS__);              \
    default: return base::fn(__VA_ARGS__);                             \
  }
#elif PLN_ARM_KERNELS
#define PLN_DISPATCH(fn, ...)                                          \
  switch (chosen()) {                                                  \
    case Capability::kNeon: return neon::fn(__VA_ARGS__);              \
    default: return base::fn(__VA_ARGS__);                             \
  }
#else
#define PLN_DISPATCH(fn, ...)                                          \
  (void)chosen();                                                      \
  return base::fn(__VA_ARGS__);
#endif
