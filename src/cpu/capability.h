#pragma once
// Included by every per-capability kernel source: whether this compilation
// targets AVX2+FMA, and the namespace it compiles into (see CMakeLists.txt).

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define PLN_HAVE_AVX2 1
#else
#define PLN_HAVE_AVX2 0
#endif

#ifndef PLN_CPU_NS
#error "PLN_CPU_NS must name the capability namespace"
#endif
