#pragma once
// Fused kernels of an activation phi on a second-order Taylor jet (the
// layout of cpu/jet_kernels.h): a contiguous [1 + 2D, elements] array, part 0
// the values z, parts 1..D their first derivatives z'_k along D directions,
// parts D+1..2D their second derivatives z''_k. Elementwise, per direction k:
//
//   forward:   y = phi(z),  y'_k = phi'(z) z'_k,  y''_k = phi''(z) z'_k^2 + phi'(z) z''_k
//   backward:  dz'_k  = phi'(z) dy'_k + 2 phi''(z) z'_k dy''_k
//              dz''_k = phi'(z) dy''_k
//              dz     = phi'(z) dy + sum_k [phi''(z) (z'_k dy'_k + z''_k dy''_k) + phi'''(z) z'_k^2 dy''_k]
//
// CPU kernels compiled per capability like kernels.h (src/cpu/activation_jets.cpp);
// the CUDA kernels (src/cuda/activation_jets.cu) take the same shapes.

#include <cstdint>

namespace pln::cpu {

/// The activations with fused jet kernels.
enum class JetActivation { kTanh, kSat, kRelu, kSilu, kSigmoid };

struct ActivationJetShape {
  int64_t elements;    ///< values in one part (rows x features)
  int64_t directions;  ///< D
  int64_t parts() const { return 1 + 2 * directions; }
};

#define PLN_DECLARE_ACTIVATION_JET_KERNELS(NS)                                                          \
  namespace NS {                                                                                        \
  void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const float* x, float* y);    \
  void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const double* x, double* y); \
  void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const float* dy,          \
                               const float* x, float* dx);                                              \
  void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const double* dy,         \
                               const double* x, double* dx);                                            \
  }

PLN_DECLARE_ACTIVATION_JET_KERNELS(base)
PLN_DECLARE_ACTIVATION_JET_KERNELS(avx2)
PLN_DECLARE_ACTIVATION_JET_KERNELS(avx512)
PLN_DECLARE_ACTIVATION_JET_KERNELS(neon)
#undef PLN_DECLARE_ACTIVATION_JET_KERNELS

/// Dispatches to the best compiled capability (src/ops/cpu.cpp).
template <typename T>
void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const T* x, T* y);
template <typename T>
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const T* dy, const T* x, T* dx);

}  // namespace pln::cpu
