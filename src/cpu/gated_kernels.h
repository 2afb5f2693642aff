#pragma once
// Fused CPU kernels of the gated norm (src/ops/gated.cpp): rows of C features,
// last axis, in groups of `group`; `z`, the gate, is shaped like x.
//
//   gate before the norm (Mamba-2): h = x * act(z), y = norm(h) * weight + bias
//   gate after the norm (Gated DeltaNet): y = (norm(x) * weight + bias) * act(z)
//
// norm subtracts each group's mean when centering (PLN), else not (PLS, RMS
// norm per group); act is SiLU or the sigmoid. One pass over x and z forward,
// one over x, z and dy backward. Sums are taken in double.

#include <cstdint>

namespace pln::cpu::gated {

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
void forward(const Shape& s, const T* x, const T* z, const T* weight, const T* bias, T* y, T* mean, T* rstd);

/// dx, dz, and the per-feature sums dweight and dbias ([C], double, overwritten).
/// The statistics are taken again in double (mean and rstd are the forward's,
/// for the operator's signature).
template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const T* weight, const T* bias,
              const T* mean, const T* rstd, T* dx, T* dz, double* dweight, double* dbias);

}  // namespace pln::cpu::gated
