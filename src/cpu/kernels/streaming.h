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
// of 8: a quarter of a 32 MiB L3,
// the rule glibc's memcpy follows. On a Zen 3 (AVX2) machine, one thread,
// 8 MiB of float, streamed: the features-last forward at [4096, 512] ran
// 1.02-1.33x faster and the forward followed by a read of y 0.89-1.17x
// (g = 8; g = 4: 1.00-1.24x and 1.07-1.13x); NCHW [32, 64, 32, 32]
// 1.46-1.70x (with the read 1.21-1.37x), its backward 1.43-1.50x. At 1-2 MiB
// the features-last forward and its reader were 0.72-0.89x, at 4 MiB
// 1.02-1.06x. The AVX2 features-last backward streamed was 0.84-0.91x there;
// on a Zen 5 machine, where it is bound by its arithmetic, streamed and
// prefetched as the AVX-512 one (backward_octet_blocks_avx512) it was
// 1.03-1.09x alone and 0.92-0.95x followed by a read of dx, so it does not
// stream. On an Intel Xeon (AVX-512), 8 MiB streamed: the AVX2 forward
// 0.96-1.17x, with the read 0.67-0.78x; from 12 MiB the forward 1.4-1.8x.
// The AVX-512 forward of float groups of 8 streamed was 0.96-0.97x at 8 MiB
// (0.71-0.73x with the read), so it streams only from kStreamOctetForwardBytes.
// A constant, not a share of the L3 the CPU reports: that machine reports
// 480 MiB but copies 16 MiB 3.3x slower than 8, and streams its 32 MiB NCHW
// 1.8x faster.
constexpr int64_t kStreamBytes = int64_t(8) << 20;
// The AVX-512 forward of float groups of 8 streams its output from twice a
// 32 MiB L3 on. On a Zen 4 machine ([rows, 512], the kernel alone, min of 30-40
// rounds, same bits), streamed against stored through the cache, ns a value
// and thread: 8-16 MiB at two threads 0.29-0.30 against 0.16-0.21 (with a read
// of y 0.50-0.56 against 0.27-0.31); 32 MiB at two threads 0.29-0.30 against
// 0.30-0.34 but with the read 0.59-0.64 against 0.48-0.58; 48 MiB 0.29 against
// 0.40, with the read even; from 64 MiB 0.21-0.31 against 0.27-0.43 at one and
// two threads, with the read 0.36-0.68 against 0.40-0.80.
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
