#pragma once
// When the kernels write their output around the cache (non-temporal stores).
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cstdint>

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Outputs at least this large are written around the cache (see kStream) by
// the AVX2 forward (NCHW and features-last), the NCHW backward and, where
// streams_octet_backward() says, the AVX-512 features-last backward of groups
// of 8: a quarter of a 32 MiB L3, the rule glibc's memcpy follows. Below it,
// a reader of the output finds it in the cache, and that wins over the stores
// saved; the AVX2 features-last backward, bound by its arithmetic, never
// streams. A constant, not a share of the L3 the CPU reports, which can be far
// more than it holds at speed. Measurements: bench/results/cpu-kernel-notes.md.
constexpr int64_t kStreamBytes = int64_t(8) << 20;
// The AVX-512 forward of float groups of 8 streams its output from twice a
// 32 MiB L3 on: it writes so fast that below that, storing through the cache
// is as fast and leaves y in the cache for its reader (same notes).
constexpr int64_t kStreamOctetForwardBytes = int64_t(64) << 20;
// Whether an output of `count` values of T, in rows of `row` values starting
// at `out`, is written with non-temporal stores: at least `min_bytes`, and
// every row begins on an `align`-byte boundary (32 for the AVX2 stores, 64
// for AVX-512).
template <typename T>
bool streams_output(const T* out, int64_t row, int64_t count, int64_t align = 32,
                    int64_t min_bytes = kStreamBytes) {
  return out != nullptr && reinterpret_cast<uintptr_t>(out) % align == 0 &&
         row * int64_t(sizeof(T)) % align == 0 && count * int64_t(sizeof(T)) >= min_bytes;
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
