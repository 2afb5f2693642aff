// Every CPU kernel source compiled again as one translation unit, into the
// namespace pln::cpu::grouped, with the flags of one capability (avx2 on
// x86-64, neon on aarch64): test_kernel_grouping.cpp compares its results
// with the library's compilation of the same capability, each source its
// own translation unit.
#include "cpu/kernels.cpp"
#include "cpu/gated_kernels.cpp"
#include "cpu/jet_kernels.cpp"
#include "cpu/activation_jets.cpp"
