// The library built without the fused CUDA kernels (a LibTorch without CUDA,
// no nvcc, or -DPLN_CUDA=OFF): CUDA tensors, where there are any, take the
// composite path. A file of its own rather than a definition under a macro, so
// that the other sources compile alike with and without CUDA (and ccache
// serves one build's objects to the other).

#include "ops/ops.h"

namespace pln::ops {

bool cuda_kernels_enabled() { return false; }

}  // namespace pln::ops
