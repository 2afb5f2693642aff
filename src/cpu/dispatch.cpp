#include <c10/util/Exception.h>

#include <cstdlib>
#include <string>

#include "cpu/jet_kernels.h"
#include "cpu/kernels.h"

namespace pln::cpu {
namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// The best capability this CPU supports, or the one PLN_CPU_CAPABILITY names
// (how the tests run the portable kernels on a machine that has AVX2). A bad
// value is an error on every kernel call, not a silent fallback.
bool has_avx2() {
  static const bool chosen = [] {
    const char* wanted = std::getenv("PLN_CPU_CAPABILITY");
    if (wanted == nullptr || *wanted == '\0') return cpu_has_avx2();
    const std::string name(wanted);
    TORCH_CHECK(name == "base" || name == "avx2",
                "PLN_CPU_CAPABILITY must be base or avx2, got '", name, "'");
    TORCH_CHECK(name == "base" || cpu_has_avx2(),
                "PLN_CPU_CAPABILITY=avx2, but this CPU lacks AVX2 or FMA");
    return name == "avx2";
  }();
  return chosen;
}

}  // namespace

const char* capability() { return has_avx2() ? "avx2" : "base"; }

template <typename T>
void forward(const Geometry& g, const T* x, const T* weight, const T* bias, T* y, T* mean,
             T* rstd, double eps, bool centering) {
  if (has_avx2()) {
    avx2::forward(g, x, weight, bias, y, mean, rstd, eps, centering);
  } else {
    base::forward(g, x, weight, bias, y, mean, rstd, eps, centering);
  }
}

template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const T* mean, const T* rstd,
              const T* weight, bool centering, T* dx, double* dweight, double* dbias) {
  if (has_avx2()) {
    avx2::backward(g, dy, x, mean, rstd, weight, centering, dx, dweight, dbias);
  } else {
    base::backward(g, dy, x, mean, rstd, weight, centering, dx, dweight, dbias);
  }
}

template <typename T>
void jet_forward(const JetGeometry& g, const T* x, T* y, double eps, bool centering) {
  if (has_avx2()) {
    avx2::jet_forward(g, x, y, eps, centering);
  } else {
    base::jet_forward(g, x, y, eps, centering);
  }
}

template <typename T>
void jet_backward(const JetGeometry& g, const T* dy, const T* x, T* dx, double eps, bool centering) {
  if (has_avx2()) {
    avx2::jet_backward(g, dy, x, dx, eps, centering);
  } else {
    base::jet_backward(g, dy, x, dx, eps, centering);
  }
}

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
