// What the CPU dispatch key runs of the pln operators: the fused kernels of
// src/cpu/ (float and double with p = 2; the composite ATen ops otherwise,
// src/ops/composite.cpp), from tensors to their data, and the one choice of
// the CPU capability whose compilation of those kernels runs.
//
// The path of a call, schema to arithmetic: src/ops/registration.cpp (the
// schema) -> here (the op's CPU kernel, then the capability's switch) ->
// src/cpu/kernels.cpp (which path: group size and layout) -> the path's
// header under src/cpu/kernels/ (the loops).

#include "ops/ops.h"

#include <pln/kernels.h>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/util/Exception.h>

#if PLN_X86_KERNELS
#include <cpuid.h>
#endif
#if PLN_ARM_KERNELS
#include <sys/auxv.h>  // getauxval, and HWCAP_ASIMD from glibc's bits/hwcap.h
#endif

#include <cstdlib>
#include <optional>
#include <string>

#include "cpu/activation_jets.h"
#include "cpu/gated_kernels.h"
#include "cpu/jet_kernels.h"
#include "cpu/kernels.h"
#include "layout.h"

namespace pln::cpu {
namespace {

// Every capability of either architecture; a build holds those of the
// architecture it targets (kBuilt below, from CMakeLists.txt's
// PLN_CPU_CAPABILITIES) and runs the best the CPU supports.
enum class Capability { kBase, kAvx2, kAvx512, kNeon };

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
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (cap == Capability::kAvx2 && !avx2) return "AVX2 or FMA";
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
    TORCH_CHECK(entry != nullptr, "PLN_CPU_CAPABILITY must be base, avx2, avx512 or neon, got '", name, "'");
    TORCH_CHECK(built(entry->capability), "PLN_CPU_CAPABILITY=", name, ", but this build's kernels are ",
                kArchitecture, "'s: ", built_names());
    const char* missing = lacks(entry->capability);
    TORCH_CHECK(missing == nullptr, "PLN_CPU_CAPABILITY=", name, ", but this CPU lacks ", missing ? missing : "");
    return entry->capability;
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

const char* capability() { return name_of(chosen()); }

// The one switch from the capability to its kernels' namespace; chosen()
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

template <typename T>
void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const T* x, T* y) {
  PLN_DISPATCH(activation_jet_forward, act, s, x, y)
}

template <typename T>
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const T* dy, const T* x, T* dx) {
  PLN_DISPATCH(activation_jet_backward, act, s, dy, x, dx)
}

namespace gated {

template <typename T>
void forward(const Shape& s, const T* x, const T* z, const compute_t<T>* weight, const compute_t<T>* bias, T* y,
             compute_t<T>* mean, compute_t<T>* rstd) {
  PLN_DISPATCH(gated_forward, s, x, z, weight, bias, y, mean, rstd)
}

template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const compute_t<T>* weight,
              const compute_t<T>* bias, const compute_t<T>* /*mean*/, const compute_t<T>* /*rstd*/, T* dx, T* dz,
              double* dweight, double* dbias) {
  PLN_DISPATCH(gated_backward, s, dy, x, z, weight, bias, dx, dz, dweight, dbias)
}

template void forward<float>(const Shape&, const float*, const float*, const float*, const float*, float*, float*,
                             float*);
template void forward<double>(const Shape&, const double*, const double*, const double*, const double*, double*,
                              double*, double*);
template void backward<float>(const Shape&, const float*, const float*, const float*, const float*, const float*,
                              const float*, const float*, float*, float*, double*, double*);
template void backward<double>(const Shape&, const double*, const double*, const double*, const double*,
                               const double*, const double*, const double*, double*, double*, double*, double*);
template void forward<c10::Half>(const Shape&, const c10::Half*, const c10::Half*, const float*, const float*,
                                 c10::Half*, float*, float*);
template void forward<c10::BFloat16>(const Shape&, const c10::BFloat16*, const c10::BFloat16*, const float*,
                                     const float*, c10::BFloat16*, float*, float*);
template void backward<c10::Half>(const Shape&, const c10::Half*, const c10::Half*, const c10::Half*, const float*,
                                  const float*, const float*, const float*, c10::Half*, c10::Half*, double*,
                                  double*);
template void backward<c10::BFloat16>(const Shape&, const c10::BFloat16*, const c10::BFloat16*,
                                      const c10::BFloat16*, const float*, const float*, const float*, const float*,
                                      c10::BFloat16*, c10::BFloat16*, double*, double*);

}  // namespace gated

#undef PLN_DISPATCH

template void jet_forward<float>(const JetGeometry&, const float*, float*, double, bool);
template void jet_forward<double>(const JetGeometry&, const double*, double*, double, bool);
template void jet_backward<float>(const JetGeometry&, const float*, const float*, float*, double, bool);
template void jet_backward<double>(const JetGeometry&, const double*, const double*, double*, double, bool);
template void activation_jet_forward<float>(JetActivation, const ActivationJetShape&, const float*, float*);
template void activation_jet_forward<double>(JetActivation, const ActivationJetShape&, const double*, double*);
template void activation_jet_backward<float>(JetActivation, const ActivationJetShape&, const float*, const float*,
                                             float*);
template void activation_jet_backward<double>(JetActivation, const ActivationJetShape&, const double*,
                                              const double*, double*);

template void forward<float>(const Geometry&, const float*, const float*, const float*, float*,
                             float*, float*, double, bool);
template void forward<double>(const Geometry&, const double*, const double*, const double*,
                              double*, double*, double*, double, bool);
template void backward<float>(const Geometry&, const float*, const float*, const float*,
                              const float*, const float*, bool, float*, double*, double*);
template void backward<double>(const Geometry&, const double*, const double*, const double*,
                               const double*, const double*, bool, double*, double*, double*);

}  // namespace pln::cpu

namespace pln {

const char* cpu_kernels() { return cpu::capability(); }

}  // namespace pln

namespace pln::ops::cpu {

namespace {

at::Tensor weight_or_ones(const OptionalTensor& w, const at::Tensor& x, int64_t num_features) {
  return w.has_value() ? w->reshape({-1}).contiguous() : at::ones({num_features}, x.options());
}

at::Tensor bias_or_zeros(const OptionalTensor& b, const at::Tensor& x, int64_t num_features) {
  return b.has_value() ? b->reshape({-1}).contiguous() : at::zeros({num_features}, x.options());
}

void check_fused_dtype(const at::Tensor& x, const char* op) {
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble, op,
              ": the fused CPU kernels take float32 or float64 input, got ", x.scalar_type());
}

}  // namespace

// save_stats = false: nothing will be differentiated, so the per-group mean
// and 1/std are not written out.
Tensor3 fused_forward(const at::Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                      const ParallelNormSpec& spec, bool save_stats) {
  const detail::KernelView view =
      detail::kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  const auto& g = view.geometry;
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(view.format));
  at::Tensor mean, rstd;
  if (save_stats) {
    // [outer, groups, inner] in memory, shaped like x with groups for features.
    const auto shape = stats_shape(x, spec);
    mean = at::empty_symint(shape, x.options(), view.format);
    rstd = at::empty_symint(shape, x.options(), view.format);
  }
  const at::Tensor w = weight_or_ones(weight, x, spec.num_features);
  const at::Tensor b = bias_or_zeros(bias, x, spec.num_features);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_parallel_ln_forward", [&] {
    pln::cpu::forward<scalar_t>(g, view.data.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                b.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                                save_stats ? mean.data_ptr<scalar_t>() : nullptr,
                                save_stats ? rstd.data_ptr<scalar_t>() : nullptr, spec.eps,
                                spec.centering);
  });
  return {y, mean, rstd};
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight,
                            const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                            double eps, bool centering, c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout));
  check_fused_dtype(input, "pln::parallel_ln_forward");
  return fused_forward(input, weight, bias, spec, /*save_stats=*/true);
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input,
                             const at::Tensor& mean, const at::Tensor& rstd,
                             const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering,
                             c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  check_fused_dtype(input, "pln::parallel_ln_backward");
  const detail::KernelView view =
      detail::kernel_view(input, spec.layout, spec.num_features, spec.num_per_group);
  const at::Tensor dy = detail::conform(grad_output, view);
  const at::Tensor m = detail::conform(mean, view), r = detail::conform(rstd, view);
  const at::Tensor w = weight_or_ones(weight, input, spec.num_features);
  at::Tensor dx = at::empty(input.sizes(), input.options().memory_format(view.format));
  // Per-feature sums are accumulated in double whatever the input's dtype.
  at::Tensor dw = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  at::Tensor db = at::empty({spec.num_features}, input.options().dtype(at::kDouble));
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "pln_parallel_ln_backward", [&] {
    pln::cpu::backward<scalar_t>(view.geometry, dy.data_ptr<scalar_t>(), view.data.data_ptr<scalar_t>(),
                                 m.data_ptr<scalar_t>(), r.data_ptr<scalar_t>(),
                                 w.data_ptr<scalar_t>(), spec.centering, dx.data_ptr<scalar_t>(),
                                 dw.data_ptr<double>(), db.data_ptr<double>());
  });
  return {dx, dw.to(input.scalar_type()), db.to(input.scalar_type())};
}

}  // namespace pln::ops::cpu
