// The gated norm's CUDA kernels compiled by the host compiler against HIP-CPU
// (see src/cuda/runtime.h): the file itself, not a copy.
#include "cuda/gated.cu"
