// Registers the operators with PyTorch's dispatcher, once, so that
// torch.ops.load_library("libpln_ops.so") exposes them to Python as
// torch.ops.pln.parallel_ln and torch.ops.pln.pq_norm. They are registered as
// composite kernels: autograd sees the custom function (or the composite ops)
// that pln::functional runs, so gradcheck and gradgradcheck go through the
// same paths as C++ callers.

#include <pln/functional.h>

#include <torch/library.h>

#include <string>

namespace {

at::Tensor value_or_undefined(const c10::optional<at::Tensor>& t) {
  return t.has_value() ? *t : at::Tensor();
}

at::Tensor parallel_ln_op(const at::Tensor& input, const c10::optional<at::Tensor>& weight,
                          const c10::optional<at::Tensor>& bias, int64_t num_features,
                          int64_t num_per_group, double eps, bool centering,
                          const std::string& layout, double p) {
  const auto options = pln::ParallelLNOptions(num_features, num_per_group)
                           .eps(eps)
                           .centering(centering)
                           .layout(pln::layout_from_string(layout))
                           .p(p);
  return pln::functional::parallel_ln(input, options, value_or_undefined(weight),
                                      value_or_undefined(bias));
}

at::Tensor pq_norm_op(const at::Tensor& input, const c10::optional<at::Tensor>& weight,
                      const c10::optional<at::Tensor>& bias, int64_t num_features,
                      int64_t num_per_group, double p, double q, double eps, bool centering,
                      const std::string& layout) {
  const auto options = pln::PQNormOptions(num_features, num_per_group)
                           .p(p)
                           .q(q)
                           .eps(eps)
                           .centering(centering)
                           .layout(pln::layout_from_string(layout));
  return pln::functional::pq_norm(input, options, value_or_undefined(weight),
                                  value_or_undefined(bias));
}

}  // namespace

TORCH_LIBRARY(pln, m) {
  m.def("parallel_ln(Tensor input, Tensor? weight, Tensor? bias, int num_features, "
        "int num_per_group, float eps=1e-05, bool centering=True, str layout=\"nchw\", "
        "float p=2.0) -> Tensor",
        &parallel_ln_op);
  m.def("pq_norm(Tensor input, Tensor? weight, Tensor? bias, int num_features, "
        "int num_per_group, float p=2.0, float q=2.0, float eps=1e-05, bool centering=True, "
        "str layout=\"nchw\") -> Tensor",
        &pq_norm_op);
}
