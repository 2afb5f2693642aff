// pln::functional::activation_jet: checks, the composite formulas and the
// custom autograd function over the fused kernels (CPU: src/cpu/activation_jets.cpp,
// CUDA: src/cuda/activation_jets.cu).

#include <pln/activation_jet.h>
#include <pln/testing.h>

#include "cpu/activation_jets.h"
#include "ops/activation_jets.h"
#include "ops/ops.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

namespace pln {
namespace {

#ifdef PLN_WITH_CUDA
constexpr bool kCudaKernelsBuilt = true;
#else
constexpr bool kCudaKernelsBuilt = false;
#endif

struct ActivationName {
  Activation activation;
  const char* name;
};
constexpr ActivationName kNames[] = {{Activation::kTanh, "tanh"},
                                     {Activation::kSat, "sat"},
                                     {Activation::kRelu, "relu"},
                                     {Activation::kSilu, "silu"},
                                     {Activation::kSigmoid, "sigmoid"}};

cpu::JetActivation kernel_activation(Activation act) {
  switch (act) {
    case Activation::kTanh: return cpu::JetActivation::kTanh;
    case Activation::kSat: return cpu::JetActivation::kSat;
    case Activation::kRelu: return cpu::JetActivation::kRelu;
    case Activation::kSilu: return cpu::JetActivation::kSilu;
    case Activation::kSigmoid: return cpu::JetActivation::kSigmoid;
  }
  TORCH_CHECK(false, "activation_jet: unknown activation (enum value ", static_cast<int>(act), ")");
}

void check_jet(const torch::Tensor& jet, Activation act) {
  (void)kernel_activation(act);
  TORCH_CHECK(jet.defined(), "activation_jet: the jet is an undefined tensor");
  TORCH_CHECK(jet.dim() >= 1, "activation_jet: expected a jet [1 + 2D, ...] of rank >= 1, got rank 0");
  TORCH_CHECK(jet.size(0) % 2 == 1, "activation_jet: a jet has 1 + 2D parts on axis 0 (values, D first ",
              "and D second derivatives), got ", jet.size(0), " (shape ", jet.sizes(), ")");
  TORCH_CHECK(at::isFloatingType(jet.scalar_type()), "activation_jet: expected a floating-point jet, got ",
              jet.scalar_type());
}

bool has_fused_kernels(const torch::Tensor& jet) {
  const auto type = jet.scalar_type();
  if (type != at::kFloat && type != at::kDouble) return false;
  if (jet.device().is_cpu()) return true;
  return kCudaKernelsBuilt && jet.device().is_cuda() && ops::cuda_kernels_enabled();
}

cpu::ActivationJetShape shape_of(const torch::Tensor& jet) {
  const int64_t parts = jet.size(0);
  return {parts > 0 ? jet.numel() / parts : 0, (parts - 1) / 2};
}

void fused_forward(cpu::JetActivation act, const torch::Tensor& x, const torch::Tensor& y) {
  if (x.numel() == 0) return;
  if (x.device().is_cpu()) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet_forward", [&] {
      cpu::activation_jet_forward<scalar_t>(act, shape_of(x), x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>());
    });
  } else if constexpr (kCudaKernelsBuilt) {
    ops::cuda::activation_jet_forward(act, x, y);
  }
}

void fused_backward(cpu::JetActivation act, const torch::Tensor& dy, const torch::Tensor& x,
                    const torch::Tensor& dx) {
  if (x.numel() == 0) return;
  if (x.device().is_cpu()) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet_backward", [&] {
      cpu::activation_jet_backward<scalar_t>(act, shape_of(x), dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                             dx.data_ptr<scalar_t>());
    });
  } else if constexpr (kCudaKernelsBuilt) {
    ops::cuda::activation_jet_backward(act, dy, x, dx);
  }
}

class ActivationJetFunction : public torch::autograd::Function<ActivationJetFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& jet, int64_t act) {
    const auto& x = jet;  // contiguous: see activation_jet
    auto y = at::empty_like(x);
    fused_forward(kernel_activation(static_cast<Activation>(act)), x, y);
    ctx->save_for_backward({x});
    ctx->saved_data["act"] = act;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const auto act = static_cast<Activation>(ctx->saved_data["act"].toInt());
    const auto& dy = grads[0];
    torch::Tensor dx;
    if (torch::GradMode::is_enabled()) {
      // A graph of the gradient is wanted: differentiate the composite formulas.
      const auto y = detail::activation_jet_composite(x, act);
      dx = torch::autograd::grad({y}, {x}, {dy}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    } else {
      dx = at::empty_like(x);
      fused_backward(kernel_activation(act), dy.contiguous(), x, dx);
    }
    return {dx, torch::Tensor()};
  }
};

}  // namespace

Activation activation_from_name(const std::string& name) {
  for (const auto& entry : kNames) {
    if (name == entry.name) return entry.activation;
  }
  TORCH_CHECK(false, "activation_jet: the activation must be tanh, sat, relu, silu or sigmoid, got '", name, "'");
}

namespace detail {

torch::Tensor activation_jet_composite(const torch::Tensor& jet, Activation act) {
  check_jet(jet, act);
  const int64_t dirs = (jet.size(0) - 1) / 2;
  const auto z = jet[0];
  const auto first = jet.narrow(0, 1, dirs);
  const auto second = jet.narrow(0, 1 + dirs, dirs);
  torch::Tensor value, d1, d2;  // phi(z), phi'(z), phi''(z)
  switch (act) {
    case Activation::kTanh:
      value = at::tanh(z);
      d1 = 1 - value * value;
      d2 = -2 * value * d1;
      break;
    case Activation::kSigmoid:
      value = at::sigmoid(z);
      d1 = value * (1 - value);
      d2 = d1 * (1 - 2 * value);
      break;
    case Activation::kRelu:
      d1 = (z > 0).to(z.scalar_type());
      value = z * d1;
      d2 = at::zeros_like(z);
      break;
    case Activation::kSat: {
      const auto q = at::rsqrt(1 + z * z);
      value = z * q;
      d1 = q * q * q;
      d2 = -3 * z * d1 * q * q;
      break;
    }
    case Activation::kSilu: {
      // silu = z s, s = sigmoid(z): silu' = s + z s (1 - s), silu'' = s (1 - s) (2 + z (1 - 2 s)).
      const auto s = at::sigmoid(z);
      const auto ds = s * (1 - s);
      value = z * s;
      d1 = s + z * ds;
      d2 = ds * (2 + z * (1 - 2 * s));
      break;
    }
  }
  // Chain rule per direction: (phi o z)' = phi' z', (phi o z)'' = phi'' z'^2 + phi' z''.
  return at::cat({value.unsqueeze(0), d1 * first, d2 * first * first + d1 * second});
}

}  // namespace detail

namespace functional {

torch::Tensor activation_jet(const torch::Tensor& jet, Activation act) {
  check_jet(jet, act);
  if (!has_fused_kernels(jet)) return detail::activation_jet_composite(jet, act);
  // Made contiguous here, in the graph, so the saved input stays differentiable for double backward.
  return ActivationJetFunction::apply(jet.contiguous(), static_cast<int64_t>(act));
}

}  // namespace functional
}  // namespace pln
