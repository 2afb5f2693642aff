// Activations on second-order Taylor jets, in the shape every op has (ops.h):
//
//   pln::activation_jet           the jet [1 + 2D, ...] of act(z): tanh, sat, relu, silu or sigmoid
//   pln::activation_jet_backward  its input's gradient (the kernels take phi again from z)
//
// CPU float32 and float64 jets run the fused kernels of
// src/cpu/activation_jets.cpp, CUDA ones those of src/cuda/activation_jets.cu
// where enabled (cuda.cpp); other dtypes and devices the composite
// formulation. No parameters, so autocast falls through.

#include "ops/activation_jet.h"

#include "ops/autograd_support.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

namespace pln::ops {

namespace activation_jet_op {

using ActivationJetFn = at::Tensor(const at::Tensor& jet, c10::string_view activation);
using BackwardFn = at::Tensor(const at::Tensor& grad_output, const at::Tensor& jet, c10::string_view activation);

namespace {

// ------------------------------------------------------------- composite ---

// phi(z), phi'(z), phi''(z), and the chain rule per direction:
//   (phi o z)' = phi' z',  (phi o z)'' = phi'' z'^2 + phi' z''
// in the jet's compute type, rounded once to its type.
at::Tensor formulation(const at::Tensor& input, cpu::JetActivation act) {
  const at::Tensor jet = in_compute_type(input, input.scalar_type());
  const int64_t dirs = (jet.size(0) - 1) / 2;
  const auto z = jet[0];
  const auto first = jet.narrow(0, 1, dirs), second = jet.narrow(0, 1 + dirs, dirs);
  at::Tensor value, d1, d2;
  switch (act) {
    case cpu::JetActivation::kTanh:
      value = at::tanh(z);
      d1 = 1 - value * value;
      d2 = -2 * value * d1;
      break;
    case cpu::JetActivation::kSigmoid:
      value = at::sigmoid(z);
      d1 = value * (1 - value);
      d2 = d1 * (1 - 2 * value);
      break;
    case cpu::JetActivation::kRelu:
      d1 = (z > 0).to(z.scalar_type());
      value = z * d1;
      d2 = at::zeros_like(z);
      break;
    case cpu::JetActivation::kSat: {
      const auto q = at::rsqrt(1 + z * z);
      value = z * q;
      d1 = q * q * q;
      d2 = -3 * z * d1 * q * q;
      break;
    }
    case cpu::JetActivation::kSilu: {
      // silu = z s, s = sigmoid(z): silu' = s + z s (1 - s), silu'' = s (1 - s) (2 + z (1 - 2 s)).
      const auto s = at::sigmoid(z);
      const auto ds = s * (1 - s);
      value = z * s;
      d1 = s + z * ds;
      d2 = ds * (2 + z * (1 - 2 * s));
      break;
    }
  }
  return at::cat({value.unsqueeze(0), d1 * first, d2 * first * first + d1 * second}).to(input.scalar_type());
}

// The input's gradient from the formulation, as a graph where one is wanted (create_graph).
at::Tensor gradient_formulation(const at::Tensor& grad_output, const at::Tensor& jet, cpu::JetActivation act,
                                bool create_graph) {
  const at::AutoGradMode enable_grad(true);
  const at::Tensor x = create_graph ? jet : jet.detach().requires_grad_();
  return torch::autograd::grad({formulation(x, act)}, {x}, {grad_output}, create_graph, create_graph)[0];
}

at::Tensor composite_kernel(const at::Tensor& jet, c10::string_view activation) {
  return formulation(jet, checked(jet, activation)).contiguous();
}

at::Tensor composite_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet,
                                     c10::string_view activation) {
  return gradient_formulation(grad_output, jet, checked(jet, activation), /*create_graph=*/false);
}

// ------------------------------------------------------------------- CPU ---

at::Tensor cpu_kernel(const at::Tensor& jet, c10::string_view activation) {
  const auto act = checked(jet, activation);
  if (!fused(jet)) return formulation(jet, act).contiguous();
  const at::Tensor x = jet.contiguous();
  at::Tensor y = at::empty_like(x);
  if (x.numel() > 0) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet", [&] {
      cpu::activation_jet_forward<scalar_t>(act, shape_of(x), x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>());
    });
  }
  return y;
}

at::Tensor cpu_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet, c10::string_view activation) {
  const auto act = checked(jet, activation);
  if (!fused(jet)) return gradient_formulation(grad_output, jet, act, /*create_graph=*/false);
  check_backward(grad_output, jet);
  const at::Tensor x = jet.contiguous(), dy = grad_output.contiguous();
  at::Tensor dx = at::empty_like(x);
  if (x.numel() > 0) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet_backward", [&] {
      cpu::activation_jet_backward<scalar_t>(act, shape_of(x), dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                             dx.data_ptr<scalar_t>());
    });
  }
  return dx;
}

// ------------------------------------------------------------------ Meta ---

at::Tensor meta_kernel(const at::Tensor& jet, c10::string_view activation) {
  checked(jet, activation);
  return at::empty_like(jet, at::MemoryFormat::Contiguous);
}

at::Tensor meta_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet, c10::string_view activation) {
  checked(jet, activation);
  check_backward(grad_output, jet);
  return at::empty_like(jet, at::MemoryFormat::Contiguous);
}

// -------------------------------------------------------------- Autograd ---

using autograd_support::Route;

at::Tensor call(const at::Tensor& jet, c10::string_view activation) {
  static const auto op = handle<ActivationJetFn>("pln::activation_jet");
  return op.call(jet, activation);
}

at::Tensor call_backward(const at::Tensor& grad_output, const at::Tensor& jet, c10::string_view activation) {
  static const auto op = handle<BackwardFn>("pln::activation_jet_backward");
  return op.call(grad_output, jet, activation);
}

class ActivationJetFunction : public torch::autograd::Function<ActivationJetFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& jet,
                            const std::string& activation) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({jet});
    ctx->saved_data["activation"] = activation;
    return call(jet, activation);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {call_backward(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["activation"].toStringRef()),
            at::Tensor()};
  }
};

at::Tensor autograd_kernel(const at::Tensor& jet, c10::string_view activation) {
  switch (autograd_support::route(fused(jet), jet)) {
    case Route::kBelowAutograd: {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return call(jet, activation);
    }
    case Route::kFunction:
      return ActivationJetFunction::apply(jet, std::string(activation.data(), activation.size()));
    case Route::kComposite:
      break;
  }
  return formulation(jet, checked(jet, activation));
}

at::Tensor autograd_backward_kernel(const at::Tensor& grad_output, const at::Tensor& jet,
                                    c10::string_view activation) {
  if (autograd_support::route(fused(jet), grad_output, jet) == Route::kBelowAutograd) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad_output, jet, activation);
  }
  // A graph of the gradient is wanted (PINNs differentiate the network twice): the formulation's.
  return gradient_formulation(grad_output, jet, checked(jet, activation), /*create_graph=*/true);
}

}  // namespace

const ActivationEntry& named(c10::string_view name) {
  for (const auto& entry : kActivations) {
    if (name == entry.name) return entry;
  }
  TORCH_CHECK(false, "activation_jet: the activation must be tanh, sat, relu, silu or sigmoid, got '",
              std::string(name.data(), name.size()), "'");
}

const ActivationEntry& entry_of(Activation activation) {
  for (const auto& entry : kActivations) {
    if (entry.activation == activation) return entry;
  }
  TORCH_CHECK(false, "activation_jet: unknown activation (enum value ", static_cast<int>(activation), ")");
}

cpu::JetActivation checked(const at::Tensor& jet, c10::string_view activation) {
  const cpu::JetActivation kernel = named(activation).kernel;
  TORCH_CHECK(jet.defined(), "activation_jet: the jet is an undefined tensor");
  TORCH_CHECK(jet.dim() >= 1, "activation_jet: expected a jet [1 + 2D, ...] of rank >= 1, got rank 0");
  TORCH_CHECK(jet.size(0) % 2 == 1, "activation_jet: a jet has 1 + 2D parts on axis 0 (values, D first ",
              "and D second derivatives), got ", jet.size(0), " (shape ", jet.sizes(), ")");
  TORCH_CHECK(at::isFloatingType(jet.scalar_type()), "activation_jet: expected a floating-point jet, got ",
              jet.scalar_type());
  return kernel;
}

void check_backward(const at::Tensor& grad_output, const at::Tensor& jet) {
  TORCH_CHECK(grad_output.sym_sizes() == jet.sym_sizes() && grad_output.scalar_type() == jet.scalar_type(),
              "pln::activation_jet_backward: grad_output is ", grad_output.scalar_type(), " of shape ",
              grad_output.sym_sizes(), ", the jet ", jet.scalar_type(), " of shape ", jet.sym_sizes());
}

// p = 2: no exponent applies; the kernels take float32 and float64.
bool fused(const at::Tensor& jet) { return fused_kernels_take(jet, 2.0, /*half_types=*/false); }

cpu::ActivationJetShape shape_of(const at::Tensor& jet) {
  const int64_t parts = jet.size(0);
  return {parts > 0 ? jet.numel() / parts : 0, (parts - 1) / 2};
}

at::Tensor composite(const at::Tensor& jet, c10::string_view activation) {
  return formulation(jet, checked(jet, activation));
}

}  // namespace activation_jet_op

at::Tensor activation_jet(const at::Tensor& jet, c10::string_view activation) {
  // The dispatcher finds no device for an undefined tensor: named here first.
  TORCH_CHECK(jet.defined(), "activation_jet: the jet is an undefined tensor");
  return activation_jet_op::call(jet, activation);
}

}  // namespace pln::ops

// ------------------------------------------------------------ registration ---

namespace activation_op = pln::ops::activation_jet_op;

TORCH_LIBRARY_FRAGMENT(pln, m) {
  m.def("activation_jet(Tensor jet, str activation) -> Tensor");
  m.def("activation_jet_backward(Tensor grad_output, Tensor jet, str activation) -> Tensor");
}

TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("activation_jet", TORCH_FN(activation_op::cpu_kernel));
  m.impl("activation_jet_backward", TORCH_FN(activation_op::cpu_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Meta, m) {
  m.impl("activation_jet", TORCH_FN(activation_op::meta_kernel));
  m.impl("activation_jet_backward", TORCH_FN(activation_op::meta_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("activation_jet", TORCH_FN(activation_op::composite_kernel));
  m.impl("activation_jet_backward", TORCH_FN(activation_op::composite_backward_kernel));
}

TORCH_LIBRARY_IMPL(pln, Autograd, m) {
  m.impl("activation_jet", TORCH_FN(activation_op::autograd_kernel));
  m.impl("activation_jet_backward", TORCH_FN(activation_op::autograd_backward_kernel));
}
