// The pln operators' schemas and the kernels registered for each dispatch key:
// the one place where the dispatcher is told which code runs for which device.
// Loading libpln registers them, so torch.ops.pln (Python), TorchScript,
// torch.export and AOTInductor programs, and pln::functional all find them.

#include "ops/ops.h"

#include <pln/kernels.h>
#include <torch/library.h>
#include <torch/version.h>

#include <string>

// What the pln::ops CMake target makes the linker look for, so that a program
// linking it keeps libpln, and with it these registrations.
extern "C" __attribute__((visibility("default"))) const int pln_operators_registered = 1;

// The LibTorch version these kernels were compiled against; the Python package
// refuses to run them under another torch.
extern "C" __attribute__((visibility("default"))) const char* pln_torch_version() { return TORCH_VERSION; }
// The same, findable in the file without loading it (loading a library built
// against another LibTorch can abort the process): the Python package reads it first.
extern "C" __attribute__((visibility("default"), used)) const char pln_built_against[] = "pln:libtorch=" TORCH_VERSION;

TORCH_LIBRARY(pln, m) {
  m.def("parallel_ln(Tensor input, Tensor? weight, Tensor? bias, int num_features, "
        "int num_per_group, float eps=1e-05, bool centering=True, str layout=\"nchw\", "
        "float p=2.0) -> Tensor");
  m.def("pq_norm(Tensor input, Tensor? weight, Tensor? bias, int num_features, "
        "int num_per_group, float p=2.0, float q=2.0, float eps=1e-05, bool centering=True, "
        "str layout=\"nchw\") -> Tensor");
  m.def("parallel_ln_forward(Tensor input, Tensor? weight, Tensor? bias, int num_features, "
        "int num_per_group, float eps=1e-05, bool centering=True, str layout=\"nchw\") "
        "-> (Tensor output, Tensor mean, Tensor rstd)");
  m.def("parallel_ln_backward(Tensor grad_output, Tensor input, Tensor mean, Tensor rstd, "
        "Tensor? weight, int num_features, int num_per_group, float eps=1e-05, "
        "bool centering=True, str layout=\"nchw\") "
        "-> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)");
  // The CPU kernels the fused ops run in this process (pln.cpu_kernels()): an
  // op, so that a bad PLN_CPU_CAPABILITY reaches Python as an error naming it.
  m.def("cpu_kernels() -> str", [] { return std::string(pln::cpu_kernels()); });
}

TORCH_LIBRARY_IMPL(pln, CPU, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::fused_or_composite<pln::ops::cpu::fused_forward>));
  m.impl("parallel_ln_forward", TORCH_FN(pln::ops::cpu::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_FN(pln::ops::cpu::parallel_ln_backward));
}

#ifdef PLN_WITH_CUDA
TORCH_LIBRARY_IMPL(pln, CUDA, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::fused_or_composite<pln::ops::cuda::fused_forward>));
  m.impl("parallel_ln_forward", TORCH_FN(pln::ops::cuda::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_FN(pln::ops::cuda::parallel_ln_backward));
}
#endif

// Under torch.autocast the parameters follow the activation's dtype (the
// forward and backward ops fall through: autocast sits above autograd), on
// either device's autocast key.
namespace {
void register_autocast_kernels(torch::Library& m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::autocast::parallel_ln));
  m.impl("pq_norm", TORCH_FN(pln::ops::autocast::pq_norm));
}
}  // namespace
TORCH_LIBRARY_IMPL(pln, AutocastCUDA, m) { register_autocast_kernels(m); }
TORCH_LIBRARY_IMPL(pln, AutocastCPU, m) { register_autocast_kernels(m); }

// Every other backend runs the composite ATen ops (and so does pq_norm on every one).
TORCH_LIBRARY_IMPL(pln, CompositeExplicitAutograd, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::composite::parallel_ln));
  m.impl("pq_norm", TORCH_FN(pln::ops::composite::pq_norm));
}

TORCH_LIBRARY_IMPL(pln, Meta, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::meta::parallel_ln));
  m.impl("pq_norm", TORCH_FN(pln::ops::meta::pq_norm));
  m.impl("parallel_ln_forward", TORCH_FN(pln::ops::meta::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_FN(pln::ops::meta::parallel_ln_backward));
}

TORCH_LIBRARY_IMPL(pln, Autograd, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::autograd::parallel_ln));
  m.impl("pq_norm", TORCH_FN(pln::ops::autograd::pq_norm));
  m.impl("parallel_ln_forward", TORCH_FN(pln::ops::autograd::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_FN(pln::ops::autograd::parallel_ln_backward));
}
