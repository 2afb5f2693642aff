#pragma once
// Included by every per-capability kernel source: whether this compilation
// targets AVX2+FMA (and AVX-512), and the namespace it compiles into (see CMakeLists.txt).

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

#ifndef PLN_CPU_NS
#error "PLN_CPU_NS must name the capability namespace"
#endif
