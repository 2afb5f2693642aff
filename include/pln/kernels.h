#pragma once
// Which fused kernels run: what a benchmark or a run's record notes beside its
// numbers (the kernels' instruction set can change a result's last bits).

namespace pln {

/// The instruction set the fused CPU kernels run with: "avx512", "avx2" or
/// "base" on x86-64, "neon" or "base" on aarch64 (the portable kernels
/// elsewhere), the best this CPU supports unless the environment variable
/// PLN_CPU_CAPABILITY names one (any other value, or one this build or CPU
/// lacks, is a c10::Error).
const char* cpu_kernels();

}  // namespace pln
