#include <c10/util/Exception.h>

#if PLN_X86_KERNELS
#include <cpuid.h>
#endif

#include <cstdlib>
#include <optional>
#include <string>

#include "cpu/jet_kernels.h"
#include "cpu/kernels.h"

namespace pln::cpu {
namespace {

enum class Capability { kBase, kAvx2, kAvx512 };

// The value of the environment variable `name`, or none when it is unset or empty.
std::optional<std::string> environment_setting(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

#if PLN_X86_KERNELS
Capability best_supported() {
  // __builtin_cpu_supports also checks that the OS saves the vector state.
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (avx2 && avx512) return Capability::kAvx512;
  if (avx2) return Capability::kAvx2;
  return Capability::kBase;
}
#else
// Another architecture: the portable kernels.
Capability best_supported() { return Capability::kBase; }
#endif

// The best capability this CPU supports, or the one PLN_CPU_CAPABILITY names
// (how the tests run the AVX2 and portable kernels on a machine that has
// AVX-512). A bad value is an error on every kernel call, not a silent fallback.
Capability chosen() {
  static const Capability cap = [] {
    const Capability best = best_supported();
    const auto wanted = environment_setting("PLN_CPU_CAPABILITY");
    if (!wanted) return best;
    const std::string& name = *wanted;
    TORCH_CHECK(name == "base" || name == "avx2" || name == "avx512",
                "PLN_CPU_CAPABILITY must be base, avx2 or avx512, got '", name, "'");
    if (name == "base") return Capability::kBase;
    TORCH_CHECK(best != Capability::kBase, "PLN_CPU_CAPABILITY=", name,
                ", but this CPU lacks AVX2 or FMA");
    if (name == "avx2") return Capability::kAvx2;
    TORCH_CHECK(best == Capability::kAvx512,
                "PLN_CPU_CAPABILITY=avx512, but this CPU lacks AVX-512 (F, DQ, VL and BW)");
    return Capability::kAvx512;
  }();
  return cap;
}

#if PLN_X86_KERNELS
// AMD's family (base plus extended, as AMD documents it), or 0 on another vendor's CPU.
unsigned amd_family() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return 0;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  const unsigned base = (eax >> 8) & 0xF;
  return base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
}
#else
unsigned amd_family() { return 0; }
#endif

}  // namespace

// Streaming the backward's dx pays where the kernel is otherwise bound by
// memory (Zen 5) and costs where it is bound by its arithmetic (Zen 4); other
// CPUs, not measured, store through the cache as the kernel did before
// commit 9c853cd (measurements: bench/results/cpu-kernel-notes.md).
bool streams_octet_backward() {
  static const bool on = [] {
    if (const auto wanted = environment_setting("PLN_CPU_STREAM_BACKWARD")) {
      TORCH_CHECK(*wanted == "0" || *wanted == "1", "PLN_CPU_STREAM_BACKWARD must be 0 or 1, got '",
                  *wanted, "'");
      return *wanted == "1";
    }
    return amd_family() == 0x1A;
  }();
  return on;
}

const char* capability() {
  switch (chosen()) {
    case Capability::kAvx512: return "avx512";
    case Capability::kAvx2: return "avx2";
    default: return "base";
  }
}

// Without the x86 variants (another architecture), chosen() is always kBase.
#if PLN_X86_KERNELS
#define PLN_DISPATCH(fn, ...)                                          \
  switch (chosen()) {                                                  \
    case Capability::kAvx512: return avx512::fn(__VA_ARGS__);          \
    case Capability::kAvx2: return avx2::fn(__VA_ARGS__);              \
    default: return base::fn(__VA_ARGS__);                             \
  }
#else
#define PLN_DISPATCH(fn, ...) return base::fn(__VA_ARGS__);
#endif

template <typename T>
void forward(const Geometry& g, const T* x, const T* weight, const T* bias, T* y, T* mean,
             T* rstd, double eps, bool centering) {
  PLN_DISPATCH(forward, g, x, weight, bias, y, mean, rstd, eps, centering)
}

template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd,
              const T* weight, bool centering, T* dx, double* dweight, double* dbias) {
  (void)streams_octet_backward();  // a bad PLN_CPU_STREAM_BACKWARD fails every backward
  PLN_DISPATCH(backward, g, dy, x, mean, rstd, weight, centering, dx, dweight, dbias)
}

template <typename T>
void jet_forward(const JetGeometry& g, const T* x, T* y, double eps, bool centering) {
  PLN_DISPATCH(jet_forward, g, x, y, eps, centering)
}

template <typename T>
void jet_backward(const JetGeometry& g, const T* dy, const T* x, T* dx, double eps, bool centering) {
  PLN_DISPATCH(jet_backward, g, dy, x, dx, eps, centering)
}

#undef PLN_DISPATCH

template void jet_forward<float>(const JetGeometry&, const float*, float*, double, bool);
template void jet_forward<double>(const JetGeometry&, const double*, double*, double, bool);
template void jet_backward<float>(const JetGeometry&, const float*, const float*, float*, double, bool);
template void jet_backward<double>(const JetGeometry&, const double*, const double*, double*, double, bool);

template void forward<float>(const Geometry&, const float*, const float*, const float*, float*,
                             float*, float*, double, bool);
template void forward<double>(const Geometry&, const double*, const double*, const double*,
                              double*, double*, double*, double, bool);
template void backward<float>(const Geometry&, const float*, const float*, const float*,
                              const float*, const float*, bool, float*, double*, double*);
template void backward<double>(const Geometry&, const double*, const double*, const double*,
                               const double*, const double*, bool, double*, double*, double*);

}  // namespace pln::cpu
