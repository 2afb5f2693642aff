// The activation jets' CUDA kernels compiled by the host compiler against
// HIP-CPU (see src/cuda/runtime.h): the file itself, not a copy.
#include "cuda/activation_jets.cu"
