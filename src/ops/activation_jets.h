#pragma once
// The fused CUDA kernels of the activation jets (src/cuda/activation_jets.cu)
// from tensors: defined in cuda.cpp, built with CUDA only (PLN_WITH_CUDA);
// src/activation_jet.cpp calls them for CUDA jets when the fused CUDA kernels
// are enabled.

#include "cpu/activation_jets.h"

#include <ATen/core/Tensor.h>

namespace pln::ops::cuda {

/// y = the jet of act(x); x and y contiguous float or double [1 + 2D, ...] on one CUDA device.
void activation_jet_forward(pln::cpu::JetActivation act, const at::Tensor& x, const at::Tensor& y);
/// dx from dy and x, all contiguous, shaped and typed alike.
void activation_jet_backward(pln::cpu::JetActivation act, const at::Tensor& dy, const at::Tensor& x,
                             const at::Tensor& dx);

}  // namespace pln::ops::cuda
