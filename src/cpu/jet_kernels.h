#pragma once
// Fused CPU kernels of Parallel LN (p = 2, no affine) on a second-order
// Taylor jet: a contiguous [1 + 2D, rows, C] array holding, at every row, the
// features' values, their first derivatives along D directions, then their
// second derivatives along the same directions. Compiled per capability like
// kernels.h.

#include <cstdint>

namespace pln::cpu {

struct JetGeometry {
  int64_t rows;
  int64_t channels;
  int64_t group;
  int64_t directions;
  int64_t parts() const { return 1 + 2 * directions; }
};

// S: float or double, computed in double.
#define PLN_DECLARE_JET_KERNELS(NS)                                                                   \
  namespace NS {                                                                                      \
  template <typename S>                                                                               \
  void jet_forward(const JetGeometry& g, const S* x, S* y, double eps, bool centering);              \
  template <typename S>                                                                               \
  void jet_backward(const JetGeometry& g, const S* dy, const S* x, S* dx, double eps, bool centering); \
  }

PLN_DECLARE_JET_KERNELS(base)
PLN_DECLARE_JET_KERNELS(avx2)
PLN_DECLARE_JET_KERNELS(avx512)
PLN_DECLARE_JET_KERNELS(neon)
#undef PLN_DECLARE_JET_KERNELS

template <typename T>
void jet_forward(const JetGeometry& g, const T* x, T* y, double eps, bool centering);
template <typename T>
void jet_backward(const JetGeometry& g, const T* dy, const T* x, T* dx, double eps, bool centering);

}  // namespace pln::cpu
