#include "stable/maths.h"

#include <array>
#include <optional>
#include <vector>

namespace pln::stable {

namespace {

using torch::stable::detail::from;

// ATen's operation `op`.`overload` on the arguments (every one of its schema's, in order).
template <typename... Args>
Tensor call(const char* op, const char* overload, const Args&... args) {
  std::array<StableIValue, sizeof...(Args)> stack{from(args)...};
  TORCH_ERROR_CODE_CHECK(torch_call_dispatcher(op, overload, stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

// A scalar as a zero-dimensional tensor of like's dtype, on its device.
Tensor scalar(double value, const Tensor& like) {
  return torch::stable::full({}, value, like.scalar_type(), std::nullopt, like.device());
}

}  // namespace

Tensor StableMaths::add(const Tensor& a, const Tensor& b) { return torch::stable::subtract(a, b, -1.0); }
Tensor StableMaths::sub(const Tensor& a, const Tensor& b) { return torch::stable::subtract(a, b); }
Tensor StableMaths::mul(const Tensor& a, const Tensor& b) { return call("aten::mul", "Tensor", a, b); }
Tensor StableMaths::div(const Tensor& a, const Tensor& b) { return call("aten::div", "Tensor", a, b); }
Tensor StableMaths::add(const Tensor& a, double s) { return add(a, scalar(s, a)); }
Tensor StableMaths::rsub(double s, const Tensor& a) { return sub(scalar(s, a), a); }
// pow.Tensor_Tensor computes std::pow per element: the formulations' common
// exponents, which ATen's pow.Tensor_Scalar computes otherwise, are computed
// as it computes them.
Tensor StableMaths::pow(const Tensor& a, double e) {
  if (e == 1.0) return a;  // every use is an operand of a later operation
  if (e == 2.0) return mul(a, a);
  if (e == 3.0) return mul(mul(a, a), a);
  if (e == 0.5) return call("aten::sqrt", "", a);
  if (e == -0.5) return rsqrt(a);
  return call("aten::pow", "Tensor_Tensor", a, scalar(e, a));
}
Tensor StableMaths::rsqrt(const Tensor& a) { return call("aten::rsqrt", "", a); }
Tensor StableMaths::abs(const Tensor& a) { return call("aten::abs", "", a); }
Tensor StableMaths::sign(const Tensor& a) { return call("aten::sign", "", a); }
Tensor StableMaths::sigmoid(const Tensor& a) { return call("aten::sigmoid", "", a); }
Tensor StableMaths::silu(const Tensor& a) { return call("aten::silu", "", a); }
Tensor StableMaths::detach(const Tensor& a) { return call("aten::detach", "", a); }

Tensor StableMaths::mean_last(const Tensor& a) {
  const std::optional<std::vector<int64_t>> last{std::vector<int64_t>{-1}};
  return call("aten::mean", "dim", a, last, /*keepdim=*/true, std::optional<ScalarType>());
}

Tensor StableMaths::sum(const Tensor& a, const std::vector<int64_t>& axes) {
  return torch::stable::sum(a, torch::headeronly::IntHeaderOnlyArrayRef(axes));
}

Tensor StableMaths::first_of_last(const Tensor& a) {
  Tensor t = a;
  return torch::stable::narrow(t, -1, 0, 1);
}

Tensor StableMaths::movedim(const Tensor& a, int64_t from_axis, int64_t to_axis) {
  return call("aten::movedim", "int", a, from_axis, to_axis);
}

Tensor StableMaths::unflatten_last(const Tensor& a, int64_t g) {
  return call("aten::unflatten", "int", a, int64_t{-1}, std::vector<int64_t>{-1, g});
}

Tensor StableMaths::flatten_last(const Tensor& a) { return torch::stable::flatten(a, -2, -1); }

Tensor StableMaths::flat(const Tensor& a) {
  const int64_t all[] = {-1};
  return torch::stable::reshape(a, all);
}

Tensor StableMaths::compute(const Tensor& t, const Tensor& input) {
  return torch::stable::to(t, stats_type(input.scalar_type()));
}

Tensor StableMaths::like_type(const Tensor& t, const Tensor& like) { return torch::stable::to(t, like.scalar_type()); }

}  // namespace pln::stable
