#pragma once
// Fused CUDA kernels of the activation jets, on the layout and with the math
// of the CPU kernels (cpu/activation_jets.h): a contiguous [1 + 2D, elements]
// jet, elementwise. One thread an element in a grid stride: phi and its
// derivatives once from z, then every direction's parts. float computes in
// float, double in double.
//
// Compiled by nvcc into the library and, through HIP-CPU, into the CPU-run
// tests (tests/cuda/), as kernels.cu is.

#include "cpu/activation_jets.h"
#include "cuda/kernels.h"

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {

/// y = the jet of act(x); T is float or double.
template <typename T>
void activation_jet_forward(cpu::JetActivation act, const cpu::ActivationJetShape& s, const T* x, T* y,
                            void* stream);

/// dx from dy and x.
template <typename T>
void activation_jet_backward(cpu::JetActivation act, const cpu::ActivationJetShape& s, const T* dy, const T* x,
                             T* dx, void* stream);

}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
