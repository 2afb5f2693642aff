#pragma once
// The activation jets' checked arguments and the pieces their kernels share
// across devices: activation_jet.cpp holds the op (ops.h's shape), cuda.cpp
// its CUDA kernels (built with CUDA).

#include <pln/activation_jet.h>

#include "ops/ops.h"

#include "cpu/activation_jets.h"

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

namespace pln::ops::activation_jet_op {

/// Each activation with fused jets: the public enum, the kernels', its name.
struct ActivationEntry {
  Activation activation;
  cpu::JetActivation kernel;
  const char* name;
};
inline constexpr ActivationEntry kActivations[] = {{Activation::kTanh, cpu::JetActivation::kTanh, "tanh"},
                                                   {Activation::kSat, cpu::JetActivation::kSat, "sat"},
                                                   {Activation::kRelu, cpu::JetActivation::kRelu, "relu"},
                                                   {Activation::kSilu, cpu::JetActivation::kSilu, "silu"},
                                                   {Activation::kSigmoid, cpu::JetActivation::kSigmoid, "sigmoid"}};

/// The entry of an activation's name, or a c10::Error naming the name.
const ActivationEntry& named(c10::string_view name);
/// The entry of an activation.
const ActivationEntry& entry_of(Activation activation);

/// The activation named (tanh, sat, relu, silu or sigmoid), the jet checked; errors name the bad value.
cpu::JetActivation checked(const at::Tensor& jet, c10::string_view activation);
/// The backward's grad_output against the jet.
void check_backward(const at::Tensor& grad_output, const at::Tensor& jet);
/// Whether the fused kernels take the jet: float32 and float64 (fused_kernels_take without the 16-bit types).
bool fused(const at::Tensor& jet);
/// The kernels' view of a jet: the values of one part, and the directions.
cpu::ActivationJetShape shape_of(const at::Tensor& jet);
/// The composite formulation after the checks (the reference, pln/testing.h, and the other devices').
at::Tensor composite(const at::Tensor& jet, c10::string_view activation);

}  // namespace pln::ops::activation_jet_op
