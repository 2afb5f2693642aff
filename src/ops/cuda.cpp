// CUDA kernels of the pln operators: the fused kernels of src/cuda/ for
// float32, float64, float16 and bfloat16 with p = 2, once enabled; the
// composite ATen ops otherwise. Built when the LibTorch has CUDA and nvcc is
// found (the pip torch 2.x build).
//
// Until a device check has passed on a GPU, the fused CUDA kernels run only
// when the environment sets PLN_CUDA_KERNELS=1 (scripts/device-check does);
// without it CUDA tensors take the composite path, correct if slower.

#include "ops/ops.h"

#include "cuda/activation_jets.h"
#include "cuda/gated.h"
#include "cuda/kernels.h"
#include "ops/activation_jet.h"
#include "ops/gated_norm.h"
#include "layout.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>

namespace pln::ops {

bool cuda_kernels_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("PLN_CUDA_KERNELS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

namespace cuda {

namespace {

// The kernels' element type for a scalar type.
template <typename scalar_t>
struct Element {
  using type = scalar_t;
};
template <>
struct Element<at::Half> {
  using type = pln::cuda::half_t;
};
template <>
struct Element<at::BFloat16> {
  using type = pln::cuda::bfloat16_t;
};

template <typename scalar_t>
auto* element_ptr(const at::Tensor& t) {
  return reinterpret_cast<typename Element<scalar_t>::type*>(t.data_ptr<scalar_t>());
}

void check_launch(const char* op) {
  const char* error = pln::cuda::last_error();
  TORCH_CHECK(*error == '\0', op, ": a CUDA kernel failed: ", error);
}

// An affine parameter in the input's dtype, as the CUDA kernels read it (a
// float32 parameter of a 16-bit input is rounded to it), or `fill`.
at::Tensor affine_or(const OptionalTensor& t, const at::Tensor& x, int64_t num_features, double fill) {
  return t.has_value() ? t->reshape({-1}).to(x.scalar_type()).contiguous() : at::full({num_features}, fill, x.options());
}

}  // namespace

Tensor3 fused_forward(const at::Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                      const ParallelNormSpec& spec, bool save_stats) {
  const c10::cuda::CUDAGuard device(x.device());
  const detail::KernelView view = detail::kernel_view(x, spec.layout, spec.num_features, spec.num_per_group);
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(view.format));
  at::Tensor mean, rstd;
  if (save_stats) {
    const auto stats = x.options().dtype(stats_type(x.scalar_type()));
    // [outer, groups, inner] in memory, shaped like x with groups for features.
    const auto shape = stats_shape(x, spec);
    mean = at::empty_symint(shape, stats, view.format);
    rstd = at::empty_symint(shape, stats, view.format);
  }
  const at::Tensor w = affine_or(weight, x, spec.num_features, 1.0), b = affine_or(bias, x, spec.num_features, 0.0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "pln_parallel_ln_forward_cuda", [&] {
    using acc_t = typename pln::cuda::Acc<typename Element<scalar_t>::type>::type;
    pln::cuda::forward(view.geometry, element_ptr<scalar_t>(view.data), element_ptr<scalar_t>(w),
                       element_ptr<scalar_t>(b), element_ptr<scalar_t>(y),
                       save_stats ? mean.data_ptr<acc_t>() : nullptr, save_stats ? rstd.data_ptr<acc_t>() : nullptr,
                       spec.eps, spec.centering, at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::parallel_ln (CUDA)");
  return {y, mean, rstd};
}

at::Tensor parallel_ln(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                       int64_t num_features, int64_t num_per_group, double eps, bool centering,
                       c10::string_view layout, double p) {
  const auto spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, p);
  if (!fused_kernels_take(input, p)) return parallel_ln_op::composite(input, weight, bias, spec);
  return std::get<0>(fused_forward(input, weight, bias, check_tensors(input, weight, bias, spec), /*save_stats=*/false));
}

Tensor3 parallel_ln_forward(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            int64_t num_features, int64_t num_per_group, double eps, bool centering,
                            c10::string_view layout) {
  const auto spec = check_tensors(input, weight, bias,
                                  checked_spec(num_features, num_per_group, eps, centering, layout));
  TORCH_CHECK(fused_kernels_take(input), "pln::parallel_ln_forward: no fused CUDA kernel for this input (",
              input.scalar_type(), cuda_kernels_enabled() ? "" : "; PLN_CUDA_KERNELS=1 enables them", ")");
  return fused_forward(input, weight, bias, spec, /*save_stats=*/true);
}

Tensor3 parallel_ln_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& mean,
                             const at::Tensor& rstd, const OptionalTensor& weight, int64_t num_features,
                             int64_t num_per_group, double eps, bool centering, c10::string_view layout) {
  const auto spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                           checked_spec(num_features, num_per_group, eps, centering, layout));
  TORCH_CHECK(fused_kernels_take(input), "pln::parallel_ln_backward: no fused CUDA kernel for this input (",
              input.scalar_type(), cuda_kernels_enabled() ? "" : "; PLN_CUDA_KERNELS=1 enables them", ")");
  const c10::cuda::CUDAGuard device(input.device());
  const detail::KernelView view = detail::kernel_view(input, spec.layout, spec.num_features, spec.num_per_group);
  const at::Tensor dy = detail::conform(grad_output, view);
  const at::Tensor m = detail::conform(mean, view), r = detail::conform(rstd, view);
  const at::Tensor w = affine_or(weight, input, spec.num_features, 1.0);
  const auto acc = input.options().dtype(stats_type(input.scalar_type()));
  at::Tensor dx = at::empty(input.sizes(), input.options().memory_format(view.format));
  at::Tensor dw = at::empty({spec.num_features}, acc), db = at::empty({spec.num_features}, acc);
  at::Tensor workspace = at::empty({pln::cuda::workspace_elements(view.geometry)}, acc);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "pln_parallel_ln_backward_cuda", [&] {
    using acc_t = typename pln::cuda::Acc<typename Element<scalar_t>::type>::type;
    pln::cuda::backward(view.geometry, element_ptr<scalar_t>(dy), element_ptr<scalar_t>(view.data),
                        m.data_ptr<acc_t>(), r.data_ptr<acc_t>(), element_ptr<scalar_t>(w), spec.centering,
                        element_ptr<scalar_t>(dx), dw.data_ptr<acc_t>(), db.data_ptr<acc_t>(),
                        workspace.data_ptr<acc_t>(), at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::parallel_ln_backward (CUDA)");
  const auto param_type = weight.has_value() ? weight->scalar_type() : input.scalar_type();
  return {dx, dw.to(param_type), db.to(param_type)};
}

// ------------------------------------------------------------ gated norm ---

namespace {

Tensor3 fused_gated_forward(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                            const OptionalTensor& bias, const gated_norm_op::Spec& s, bool save_stats) {
  const c10::cuda::CUDAGuard device(input.device());
  const at::Tensor x = input.contiguous(), z = gate.contiguous();
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  auto stats_sizes = x.sizes().vec();
  stats_sizes.back() = s.groups();
  at::Tensor mean, rstd;
  if (save_stats) mean = at::empty(stats_sizes, x.options()), rstd = at::empty(stats_sizes, x.options());
  const at::Tensor w = gated_norm_op::ones_or(weight, x.options(), s.num_features, 1.0);
  const at::Tensor b = gated_norm_op::ones_or(bias, x.options(), s.num_features, 0.0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "pln_gated_norm_forward_cuda", [&] {
    pln::cuda::gated::forward(gated_norm_op::shape_of(x, s), element_ptr<scalar_t>(x), element_ptr<scalar_t>(z),
                              element_ptr<scalar_t>(w), element_ptr<scalar_t>(b), element_ptr<scalar_t>(y),
                              save_stats ? element_ptr<scalar_t>(mean) : nullptr,
                              save_stats ? element_ptr<scalar_t>(rstd) : nullptr,
                              at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::gated_norm (CUDA)");
  return {y, mean, rstd};
}

void check_enabled(const char* op, const at::Tensor& input) {
  TORCH_CHECK(cuda_kernels_enabled(), op, ": the fused CUDA kernels are off (PLN_CUDA_KERNELS=1 enables them); ",
              input.scalar_type(), " input on ", input.device());
}

}  // namespace

at::Tensor gated_norm(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                      const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                      bool centering, c10::string_view gate_position, c10::string_view activation) {
  if (!cuda_kernels_enabled()) {
    return gated_norm_op::composite_kernel(input, gate, weight, bias, num_features, num_per_group, eps, centering,
                                   gate_position, activation);
  }
  const auto s = gated_norm_op::checked(input, gate, weight, bias, num_features, num_per_group, eps, centering,
                                gate_position, activation);
  return std::get<0>(fused_gated_forward(input, gate, weight, bias, s, /*save_stats=*/false));
}

Tensor3 gated_norm_forward(const at::Tensor& input, const at::Tensor& gate, const OptionalTensor& weight,
                           const OptionalTensor& bias, int64_t num_features, int64_t num_per_group, double eps,
                           bool centering, c10::string_view gate_position, c10::string_view activation) {
  const auto s = gated_norm_op::checked(input, gate, weight, bias, num_features, num_per_group, eps, centering,
                                gate_position, activation);
  check_enabled("pln::gated_norm_forward", input);
  return fused_gated_forward(input, gate, weight, bias, s, /*save_stats=*/true);
}

Tensor4 gated_norm_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& gate,
                                   const at::Tensor& mean, const at::Tensor& rstd, const OptionalTensor& weight,
                                   const OptionalTensor& bias, int64_t num_features, int64_t num_per_group,
                                   double eps, bool centering, c10::string_view gate_position,
                                   c10::string_view activation) {
  const auto s = gated_norm_op::checked(input, gate, weight, bias, num_features, num_per_group, eps, centering,
                                gate_position, activation);
  check_enabled("pln::gated_norm_backward", input);
  gated_norm_op::check_backward(grad_output, input, mean, rstd, s);
  const c10::cuda::CUDAGuard device(input.device());
  const at::Tensor x = input.contiguous(), z = gate.contiguous(), dy = grad_output.contiguous();
  const at::Tensor w = gated_norm_op::ones_or(weight, x.options(), s.num_features, 1.0);
  const at::Tensor b = gated_norm_op::ones_or(bias, x.options(), s.num_features, 0.0);
  const auto acc = x.options().dtype(stats_type(x.scalar_type()));
  const auto shape = gated_norm_op::shape_of(x, s);
  at::Tensor dx = at::empty_like(x), dz = at::empty_like(x);
  at::Tensor dw = at::empty({s.num_features}, acc), db = at::empty({s.num_features}, acc);
  at::Tensor workspace = at::empty({pln::cuda::gated::workspace_elements(shape)}, acc);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "pln_gated_norm_backward_cuda", [&] {
    using acc_t = typename pln::cuda::Acc<typename Element<scalar_t>::type>::type;
    pln::cuda::gated::backward(shape, element_ptr<scalar_t>(dy), element_ptr<scalar_t>(x), element_ptr<scalar_t>(z),
                               element_ptr<scalar_t>(w), element_ptr<scalar_t>(b), element_ptr<scalar_t>(dx),
                               element_ptr<scalar_t>(dz), dw.data_ptr<acc_t>(), db.data_ptr<acc_t>(),
                               workspace.data_ptr<acc_t>(), at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::gated_norm_backward (CUDA)");
  return {dx, dz, dw.to(x.scalar_type()), db.to(x.scalar_type())};
}

// ------------------------------------------------------- activation jets ---

at::Tensor activation_jet(const at::Tensor& jet, c10::string_view activation) {
  const auto act = activation_jet_op::checked(jet, activation);
  if (!activation_jet_op::fused(jet)) return activation_jet_op::composite(jet, activation).contiguous();
  const c10::cuda::CUDAGuard device(jet.device());
  const at::Tensor x = jet.contiguous();
  at::Tensor y = at::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet_cuda", [&] {
    pln::cuda::activation_jet_forward(act, activation_jet_op::shape_of(x), x.data_ptr<scalar_t>(),
                                      y.data_ptr<scalar_t>(), at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::activation_jet (CUDA)");
  return y;
}

at::Tensor activation_jet_backward(const at::Tensor& grad_output, const at::Tensor& jet,
                                   c10::string_view activation) {
  const auto act = activation_jet_op::checked(jet, activation);
  activation_jet_op::check_backward(grad_output, jet);
  TORCH_CHECK(activation_jet_op::fused(jet), "pln::activation_jet_backward: no fused CUDA kernel for this jet (",
              jet.scalar_type(), cuda_kernels_enabled() ? "" : "; PLN_CUDA_KERNELS=1 enables them", ")");
  const c10::cuda::CUDAGuard device(jet.device());
  const at::Tensor x = jet.contiguous(), dy = grad_output.contiguous();
  at::Tensor dx = at::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pln_activation_jet_backward_cuda", [&] {
    pln::cuda::activation_jet_backward(act, activation_jet_op::shape_of(x), dy.data_ptr<scalar_t>(),
                                       x.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>(),
                                       at::cuda::getCurrentCUDAStream().stream());
  });
  check_launch("pln::activation_jet_backward (CUDA)");
  return dx;
}

}  // namespace cuda
}  // namespace pln::ops

TORCH_LIBRARY_IMPL(pln, CUDA, m) {
  m.impl("parallel_ln", TORCH_FN(pln::ops::cuda::parallel_ln));
  m.impl("parallel_ln_forward", TORCH_FN(pln::ops::cuda::parallel_ln_forward));
  m.impl("parallel_ln_backward", TORCH_FN(pln::ops::cuda::parallel_ln_backward));
  m.impl("gated_norm", TORCH_FN(pln::ops::cuda::gated_norm));
  m.impl("gated_norm_forward", TORCH_FN(pln::ops::cuda::gated_norm_forward));
  m.impl("gated_norm_backward", TORCH_FN(pln::ops::cuda::gated_norm_backward));
  m.impl("activation_jet", TORCH_FN(pln::ops::cuda::activation_jet));
  m.impl("activation_jet_backward", TORCH_FN(pln::ops::cuda::activation_jet_backward));
}
