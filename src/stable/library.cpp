// The operator library of the Python package's build over LibTorch's stable
// ABI (one build for every torch from 2.10 on): the schemas libpln declares
// (src/ops/schemas.h), the ops' CPU kernels and the composite formulations
// (ops/formulation.h). Everything else of the ops (their composite kernels'
// checks, the fake kernels, autograd, autocast) is registered in Python,
// python/pln/_stable_ops.py, which the package runs after loading this library.

#include <pln/kernels.h>
#include <torch/csrc/stable/library.h>

#include "ops/schemas.h"
#include "stable/ops.h"

#include <string>

// The torch whose stable ABI this library targets (PLN_STABLE_TARGET,
// CMakeLists.txt); the package's loader reads it from the file
// (python/pln/_library.py) and loads the library under that torch and every later one.
extern "C" __attribute__((visibility("default"), used)) const char pln_built_against[] =
    "pln:stable-abi=" PLN_STABLE_TARGET;

namespace {

std::string cpu_kernels() { return pln::cpu_kernels(); }

}  // namespace

namespace schema = pln::ops::schema;

STABLE_TORCH_LIBRARY(pln, m) {
  m.def(schema::kCpuKernels);
  m.def(schema::kParallelLN);
  m.def(schema::kPQNorm);
  m.def(schema::kParallelLNForward);
  m.def(schema::kParallelLNBackward);
  m.def(schema::kParallelLNComposite);
  m.def(schema::kGatedNorm);
  m.def(schema::kGatedNormForward);
  m.def(schema::kGatedNormBackward);
  m.def(schema::kGatedNormComposite);
  m.def(schema::kParallelLNFormulation);
  m.def(schema::kParallelLNGradientFormulation);
  m.def(schema::kGatedNormFormulation);
  m.def(schema::kGatedNormGradientFormulation);
}

STABLE_TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("parallel_ln", TORCH_BOX(&pln::stable::parallel_ln));
  m.impl("gated_norm", TORCH_BOX(&pln::stable::gated_norm));
  m.impl("parallel_ln_forward", TORCH_BOX(&pln::stable::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_BOX(&pln::stable::parallel_ln_backward));
  m.impl("gated_norm_forward", TORCH_BOX(&pln::stable::gated_norm_forward));
  m.impl("gated_norm_backward", TORCH_BOX(&pln::stable::gated_norm_backward));
}

// Autograd records their ATen operations, and tracers see those.
STABLE_TORCH_LIBRARY_IMPL(pln, CompositeImplicitAutograd, m) {
  m.impl("parallel_ln_formulation", TORCH_BOX(&pln::stable::parallel_ln_formulation));
  m.impl("parallel_ln_gradient_formulation", TORCH_BOX(&pln::stable::parallel_ln_gradient_formulation));
  m.impl("gated_norm_formulation", TORCH_BOX(&pln::stable::gated_norm_formulation));
  m.impl("gated_norm_gradient_formulation", TORCH_BOX(&pln::stable::gated_norm_gradient_formulation));
}

// No tensor to dispatch on: the kernel of every key.
STABLE_TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("cpu_kernels", TORCH_BOX(&cpu_kernels));
}
