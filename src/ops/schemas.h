#pragma once
// The schemas of the operators the Python package calls, declared once for
// the two libraries that register them: libpln (LibTorch's C++ API, every
// kernel in C++: parallel_ln.cpp, gated_norm.cpp, library.cpp) and the
// package's build over the stable ABI (src/stable/: the CPU kernels in C++,
// the rest in python/pln/_stable_ops.py).

namespace pln::ops::schema {

inline constexpr const char* kCpuKernels = "cpu_kernels() -> str";

inline constexpr const char* kParallelLN =
    "parallel_ln(Tensor input, Tensor? weight, Tensor? bias, int num_features, int num_per_group, "
    "float eps=1e-05, bool centering=True, str layout=\"nchw\", float p=2.0) -> Tensor";
inline constexpr const char* kPQNorm =
    "pq_norm(Tensor input, Tensor? weight, Tensor? bias, int num_features, int num_per_group, float p=2.0, "
    "float q=2.0, float eps=1e-05, bool centering=True, str layout=\"nchw\") -> Tensor";
inline constexpr const char* kParallelLNForward =
    "parallel_ln_forward(Tensor input, Tensor? weight, Tensor? bias, int num_features, int num_per_group, "
    "float eps=1e-05, bool centering=True, str layout=\"nchw\") -> (Tensor output, Tensor mean, Tensor rstd)";
inline constexpr const char* kParallelLNBackward =
    "parallel_ln_backward(Tensor grad_output, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
    "int num_features, int num_per_group, float eps=1e-05, bool centering=True, str layout=\"nchw\") "
    "-> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)";
inline constexpr const char* kParallelLNComposite =
    "parallel_ln_composite(Tensor input, Tensor? weight, Tensor? bias, int num_features, int num_per_group, "
    "float p=2.0, float q=2.0, float eps=1e-05, bool centering=True, str layout=\"nchw\") -> Tensor";

inline constexpr const char* kGatedNorm =
    "gated_norm(Tensor input, Tensor gate, Tensor? weight, Tensor? bias, int num_features, "
    "int num_per_group, float eps=1e-05, bool centering=False, str gate_position=\"before\", "
    "str activation=\"silu\") -> Tensor";
inline constexpr const char* kGatedNormForward =
    "gated_norm_forward(Tensor input, Tensor gate, Tensor? weight, Tensor? bias, int num_features, "
    "int num_per_group, float eps=1e-05, bool centering=False, str gate_position=\"before\", "
    "str activation=\"silu\") -> (Tensor output, Tensor mean, Tensor rstd)";
inline constexpr const char* kGatedNormBackward =
    "gated_norm_backward(Tensor grad_output, Tensor input, Tensor gate, Tensor mean, Tensor rstd, "
    "Tensor? weight, Tensor? bias, int num_features, int num_per_group, float eps=1e-05, "
    "bool centering=False, str gate_position=\"before\", str activation=\"silu\") "
    "-> (Tensor grad_input, Tensor grad_gate, Tensor grad_weight, Tensor grad_bias)";
inline constexpr const char* kGatedNormComposite =
    "gated_norm_composite(Tensor input, Tensor gate, Tensor? weight, Tensor? bias, int num_features, "
    "int num_per_group, float eps=1e-05, bool centering=False, str gate_position=\"before\", "
    "str activation=\"silu\") -> Tensor";

}  // namespace pln::ops::schema
