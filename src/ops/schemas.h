#pragma once
// The schemas of the operators the Python package calls, declared once for
// the two libraries that register them: libpln (LibTorch's C++ API, every
// kernel in C++: parallel_ln.cpp, gated_norm.cpp, library.cpp) and the
// package's build over the stable ABI (src/stable/: the CPU kernels and the
// composite formulations in C++, the rest in python/pln/_stable_ops.py).

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

// The formulations of ops/formulation.h without their checks, which only
// libpln_stable registers (CompositeImplicitAutograd): its Python
// registrations check a call, which takes sizes the stable ABI cannot read
// where they are symbolic, then call these. The arguments are checked ones:
// the feature axis of the input's rank, and the gated norm's options as flags.
inline constexpr const char* kParallelLNFormulation =
    "parallel_ln_formulation(Tensor input, Tensor? weight, Tensor? bias, int axis, int num_per_group, float p, "
    "float q, float eps, bool centering) -> Tensor";
inline constexpr const char* kParallelLNGradientFormulation =
    "parallel_ln_gradient_formulation(Tensor grad_output, Tensor input, Tensor? weight, int axis, "
    "int num_per_group, float eps, bool centering) -> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)";
inline constexpr const char* kGatedNormFormulation =
    "gated_norm_formulation(Tensor input, Tensor gate, Tensor? weight, Tensor? bias, int num_per_group, "
    "float eps, bool centering, bool gate_before, bool sigmoid) -> Tensor";
inline constexpr const char* kGatedNormGradientFormulation =
    "gated_norm_gradient_formulation(Tensor grad_output, Tensor input, Tensor gate, Tensor? weight, Tensor? bias, "
    "int num_per_group, float eps, bool centering, bool gate_before, bool sigmoid) "
    "-> (Tensor grad_input, Tensor grad_gate, Tensor grad_weight, Tensor grad_bias)";

}  // namespace pln::ops::schema
