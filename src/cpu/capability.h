#pragma once
// Included by every per-capability kernel source: whether this compilation
// targets AVX2+FMA (and AVX-512) or aarch64's Advanced SIMD (NEON), and the
// namespace it compiles into (see CMakeLists.txt).

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define PLN_HAVE_AVX2 1
#else
#define PLN_HAVE_AVX2 0
#endif

#if PLN_HAVE_AVX2 && defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512BW__)
#define PLN_HAVE_AVX512 1
#else
#define PLN_HAVE_AVX512 0
#endif

// Every aarch64 CPU has Advanced SIMD, so the compiler's default target has
// it too: the `neon` compilation is the one CMake defines PLN_CPU_NEON in,
// and `base` stays the portable kernels on aarch64 as on x86-64.
#if defined(PLN_CPU_NEON)
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "PLN_CPU_NEON is for compilations that target aarch64"
#endif
#include <arm_neon.h>
#define PLN_HAVE_NEON 1
#else
#define PLN_HAVE_NEON 0
#endif

#ifndef PLN_CPU_NS
#error "PLN_CPU_NS must name the capability namespace"
#endif
