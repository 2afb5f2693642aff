// The pln operator library: opened here (each op's file adds its schemas and
// kernels as a fragment, ops.h), with what belongs to the library as a whole.
// Loading libpln registers everything, so torch.ops.pln (Python), TorchScript,
// torch.export and AOTInductor programs, and pln::functional all find it.

#include <pln/kernels.h>
#include <torch/library.h>
#include <torch/version.h>

#include <string>

#include "ops/schemas.h"

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
  // The CPU kernels the fused ops run in this process (pln.cpu_kernels()): an
  // op, so that a bad PLN_CPU_CAPABILITY reaches Python as an error naming it.
  m.def(pln::ops::schema::kCpuKernels, [] { return std::string(pln::cpu_kernels()); });
}
