#pragma once
// Fused CPU kernels of the gated norm (src/ops/gated_norm.cpp): rows of C features,
// last axis, in groups of `group`; `z`, the gate, is shaped like x.
//
//   gate before the norm (Mamba-2): h = x * act(z), y = norm(h) * weight + bias
//   gate after the norm (Gated DeltaNet): y = (norm(x) * weight + bias) * act(z)
//
// norm subtracts each group's mean when centering (PLN), else not (PLS, RMS
// norm per group); act is SiLU or the sigmoid. Compiled once per CPU
// capability, as the Parallel LN kernels (cpu/kernels.h), over the same
// vector vocabulary: SIMD within a group, the activation by a vectorised
// exp, the statistics as the large-group kernels take them (two passes,
// blocked sums widened to double, exact at a common offset). x, z, y and
// their gradients are stored as S (cpu/storage.h): float16 and bfloat16 are
// read into float registers and rounded once on store, as the models'
// classes compute them; weight, bias and the statistics are compute_t<S>.

#include <cstdint>

#include "cpu/storage.h"

namespace pln::cpu {
namespace gated {

struct Shape {
  int64_t rows;
  int64_t channels;
  int64_t group;
  double eps;
  bool centering;
  bool gate_before;  ///< false: the gate multiplies the normalised output
  bool sigmoid;      ///< act is the sigmoid; false: SiLU, z * sigmoid(z)
  int64_t num_groups() const { return channels / group; }
};

/// y, and the per-group mean and 1/std ([rows, groups]; null when no backward follows).
/// weight and bias hold C values (callers pass ones and zeros when absent).
template <typename T>
void forward(const Shape& s, const T* x, const T* z, const compute_t<T>* weight, const compute_t<T>* bias, T* y,
             compute_t<T>* mean, compute_t<T>* rstd);

/// dx, dz, and the per-feature sums dweight and dbias ([C], double, overwritten;
/// the rows are summed in fixed blocks, so the sums do not depend on the thread
/// count). The statistics are taken again from x and z (mean and rstd are the
/// forward's, for the operator's signature).
template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const compute_t<T>* weight,
              const compute_t<T>* bias, const compute_t<T>* mean, const compute_t<T>* rstd, T* dx, T* dz,
              double* dweight, double* dbias);

}  // namespace gated

// Each capability's kernels (src/cpu/gated_kernels.cpp); src/ops/cpu_capability.cpp picks one.
#define PLN_DECLARE_GATED_KERNELS(NS)                                                                         \
  namespace NS {                                                                                              \
  template <typename S>                                                                                       \
  void gated_forward(const gated::Shape& s, const S* x, const S* z, const compute_t<S>* weight,              \
                     const compute_t<S>* bias, S* y, compute_t<S>* mean, compute_t<S>* rstd);                 \
  template <typename S>                                                                                       \
  void gated_backward(const gated::Shape& s, const S* dy, const S* x, const S* z, const compute_t<S>* weight, \
                      const compute_t<S>* bias, S* dx, S* dz, double* dweight, double* dbias);                \
  }

PLN_DECLARE_GATED_KERNELS(base)
PLN_DECLARE_GATED_KERNELS(avx2)
PLN_DECLARE_GATED_KERNELS(avx512)
PLN_DECLARE_GATED_KERNELS(neon)
#undef PLN_DECLARE_GATED_KERNELS

}  // namespace pln::cpu
