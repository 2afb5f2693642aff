// The one choice of the CPU capability whose compilation of the kernels runs
// (src/cpu/: one namespace a capability, cpu_dispatch.h), and the functions of
// cpu/kernels.h and cpu/gated_kernels.h that switch to it (jet_dispatch.cpp:
// the jets').

#include <pln/kernels.h>

// The library throws LibTorch's c10::Error; the stable-ABI build the error
// the stable ABI carries to Python (both a RuntimeError there).
#if PLN_STABLE_ABI
#include <torch/headeronly/util/Exception.h>
#define PLN_CHECK STD_TORCH_CHECK
#else
#include <c10/util/Exception.h>
#define PLN_CHECK TORCH_CHECK
#endif

#if PLN_X86_KERNELS
#include <cpuid.h>
#endif
#if PLN_ARM_KERNELS
#include <sys/auxv.h>  // getauxval, and HWCAP_ASIMD from glibc's bits/hwcap.h
#endif

#include <cstdlib>
#include <optional>
#include <string>

#include "cpu/gated_kernels.h"
#include "cpu/kernels.h"
#include "ops/cpu_dispatch.h"

namespace pln::cpu {
namespace {

struct CapabilityName {
  Capability capability;
  const char* name;
};
constexpr CapabilityName kNames[] = {
    {Capability::kBase, "base"}, {Capability::kAvx2, "avx2"}, {Capability::kAvx512, "avx512"},
    {Capability::kNeon, "neon"}};

const char* name_of(Capability cap) {
  for (const auto& entry : kNames) {
    if (entry.capability == cap) return entry.name;
  }
  return "base";
}

// The value of the environment variable `name`, or none when it is unset or empty.
std::optional<std::string> environment_setting(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// What this build holds and what the CPU supports, per architecture: its
// name, its capabilities (lesser first), and whether the CPU runs one (what
// it lacks otherwise, for the error).
#if PLN_X86_KERNELS
constexpr const char* kArchitecture = "x86-64";
constexpr Capability kBuilt[] = {Capability::kBase, Capability::kAvx2, Capability::kAvx512};
// __builtin_cpu_supports also checks that the OS saves the vector state.
const char* lacks(Capability cap) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (cap == Capability::kAvx2 && !avx2) return "AVX2, FMA or F16C";
  if (cap == Capability::kAvx512 && !(avx2 && avx512)) return "AVX-512 (F, DQ, VL and BW)";
  return nullptr;
}
#elif PLN_ARM_KERNELS
constexpr const char* kArchitecture = "aarch64";
constexpr Capability kBuilt[] = {Capability::kBase, Capability::kNeon};
// Advanced SIMD is part of every aarch64 CPU the kernel reports (HWCAP_ASIMD);
// asked of the kernel all the same, as x86-64's features are.
const char* lacks(Capability cap) {
  if (cap == Capability::kNeon && (getauxval(AT_HWCAP) & HWCAP_ASIMD) == 0) return "Advanced SIMD (NEON)";
  return nullptr;
}
#else
// Another architecture: the portable kernels.
constexpr const char* kArchitecture = "this architecture";
constexpr Capability kBuilt[] = {Capability::kBase};
const char* lacks(Capability) { return nullptr; }
#endif

bool built(Capability cap) {
  for (Capability b : kBuilt) {
    if (b == cap) return true;
  }
  return false;
}

// This build's capabilities, as "base, avx2, avx512".
std::string built_names() {
  std::string names;
  for (Capability b : kBuilt) names += (names.empty() ? "" : ", ") + std::string(name_of(b));
  return names;
}

Capability best_supported() {
  Capability best = Capability::kBase;
  for (Capability b : kBuilt) {
    if (lacks(b) == nullptr) best = b;
  }
  return best;
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

// The best capability this CPU supports, or the one PLN_CPU_CAPABILITY names
// (how the tests run the lesser and the portable kernels on a machine that
// has better ones). A bad value is an error on every kernel call, not a
// silent fallback: a name no architecture has, one of another architecture,
// or one this CPU lacks.
Capability chosen() {
  static const Capability cap = [] {
    const auto wanted = environment_setting("PLN_CPU_CAPABILITY");
    if (!wanted) return best_supported();
    const std::string& name = *wanted;
    const CapabilityName* entry = nullptr;
    for (const auto& e : kNames) {
      if (name == e.name) entry = &e;
    }
    PLN_CHECK(entry != nullptr, "PLN_CPU_CAPABILITY must be base, avx2, avx512 or neon, got '", name, "'");
    PLN_CHECK(built(entry->capability), "PLN_CPU_CAPABILITY=", name, ", but this build's kernels are ",
                kArchitecture, "'s: ", built_names());
    const char* missing = lacks(entry->capability);
    PLN_CHECK(missing == nullptr, "PLN_CPU_CAPABILITY=", name, ", but this CPU lacks ", missing ? missing : "");
    return entry->capability;
  }();
  return cap;
}

// Streaming the backward's dx pays where the kernel is otherwise bound by
// memory (Zen 5) and costs where it is bound by its arithmetic (Zen 4); other
// CPUs, not measured, store through the cache as the kernel did before
// commit 9c853cd (measurements: bench/results/cpu-kernel-notes.md).
bool streams_octet_backward() {
  static const bool on = [] {
    if (const auto wanted = environment_setting("PLN_CPU_STREAM_BACKWARD")) {
      PLN_CHECK(*wanted == "0" || *wanted == "1", "PLN_CPU_STREAM_BACKWARD must be 0 or 1, got '",
                  *wanted, "'");
      return *wanted == "1";
    }
    return amd_family() == 0x1A;
  }();
  return on;
}

const char* capability() { return name_of(chosen()); }


template <typename S>
void forward(const Geometry& g, const S* x, const compute_t<S>* weight, const compute_t<S>* bias, S* y,
             compute_t<S>* mean, compute_t<S>* rstd, double eps, bool centering) {
  PLN_DISPATCH(forward<S>, g, x, weight, bias, y, mean, rstd, eps, centering)
}

template <typename S>
void backward(const Geometry& g, const S* dy, const S* x, const compute_t<S>* mean, const compute_t<S>* rstd,
              const compute_t<S>* weight, bool centering, S* dx, double* dweight, double* dbias) {
  (void)streams_octet_backward();  // a bad PLN_CPU_STREAM_BACKWARD fails every backward
  PLN_DISPATCH(backward<S>, g, dy, x, mean, rstd, weight, centering, dx, dweight, dbias)
}

namespace gated {

template <typename S>
void forward(const Shape& s, const S* x, const S* z, const compute_t<S>* weight, const compute_t<S>* bias, S* y,
             compute_t<S>* mean, compute_t<S>* rstd) {
  PLN_DISPATCH(gated_forward<S>, s, x, z, weight, bias, y, mean, rstd)
}

template <typename S>
void backward(const Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* weight,
              const compute_t<S>* bias, const compute_t<S>* /*mean*/, const compute_t<S>* /*rstd*/, S* dx, S* dz,
              double* dweight, double* dbias) {
  PLN_DISPATCH(gated_backward<S>, s, dy, x, z, weight, bias, dx, dz, dweight, dbias)
}

}  // namespace gated


#define PLN_INSTANTIATE(S)                                                                                       \
  template void forward<S>(const Geometry&, const S*, const compute_t<S>*, const compute_t<S>*, S*, compute_t<S>*,  \
                           compute_t<S>*, double, bool);                                                          \
  template void backward<S>(const Geometry&, const S*, const S*, const compute_t<S>*, const compute_t<S>*,        \
                            const compute_t<S>*, bool, S*, double*, double*);                                     \
  template void gated::forward<S>(const gated::Shape&, const S*, const S*, const compute_t<S>*,                    \
                                  const compute_t<S>*, S*, compute_t<S>*, compute_t<S>*);                          \
  template void gated::backward<S>(const gated::Shape&, const S*, const S*, const S*, const compute_t<S>*,         \
                                   const compute_t<S>*, const compute_t<S>*, const compute_t<S>*, S*, S*, double*, \
                                   double*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
PLN_INSTANTIATE(bfloat16)
PLN_INSTANTIATE(float16)
#undef PLN_INSTANTIATE

}  // namespace pln::cpu

namespace pln {

const char* cpu_kernels() { return cpu::capability(); }

}  // namespace pln
