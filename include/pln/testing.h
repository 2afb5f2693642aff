#pragma once
// For tests and benchmarks, not the stable API: the composite ATen
// implementations the fused kernels (and jets) are checked and timed against,
// and which path a call takes. Not included by <pln/pln.h>; names and behaviour here may
// change between versions.

#include <pln/activation_jet.h>
#include <pln/options.h>
#include <torch/types.h>

namespace pln::detail {

/// The composite ATen implementation of pln::functional::parallel_ln (group
/// view, mean, pow, rsqrt), differentiable to any order on any device. It
/// mirrors the original Python module's ops and is the operator's fallback
/// path (other devices, dtypes or p) and the benchmarks' "composed" reference.
torch::Tensor parallel_ln_composite(const torch::Tensor& x, const ParallelLNOptions& options,
                                    const torch::Tensor& weight = {},
                                    const torch::Tensor& bias = {});

/// Which path pln::functional::parallel_ln takes for these arguments (true: the fused CPU kernels).
bool uses_fused_kernels(const torch::Tensor& x, const ParallelLNOptions& options);

/// pln::functional::parallel_ln_jet from ATen ops (group view, means, rsqrt),
/// differentiable to any order: the jets' fallback path and their tests' reference.
torch::Tensor parallel_ln_jet_composite(const torch::Tensor& jet, const ParallelLNOptions& options,
                                        const torch::Tensor& weight = {},
                                        const torch::Tensor& bias = {});

/// pln::functional::activation_jet from ATen ops (the chain rule on phi and
/// its derivatives), differentiable to any order: the fallback path, the
/// tests' reference and the benchmarks' baseline.
torch::Tensor activation_jet_composite(const torch::Tensor& jet, Activation act);

}  // namespace pln::detail
