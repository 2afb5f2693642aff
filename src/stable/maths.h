#pragma once
// The stable ABI's tensor maths as the shared formulations (ops/formulation.h)
// read them: ATen's operations through the dispatcher (torch_call_dispatcher),
// or through the stable ABI's C shim where an operation takes a Scalar, which
// the dispatcher call cannot pass (the stable ABI has no Scalar value, in 2.10
// as in 2.15): subtract, with alpha = -1 for a sum, and the scalars as
// zero-dimensional tensors.

#include "stable/tensors.h"

#include <vector>

namespace pln::stable {

struct StableMaths {
  using Tensor = torch::stable::Tensor;
  static Tensor add(const Tensor& a, const Tensor& b);
  static Tensor sub(const Tensor& a, const Tensor& b);
  static Tensor mul(const Tensor& a, const Tensor& b);
  static Tensor div(const Tensor& a, const Tensor& b);
  static Tensor add(const Tensor& a, double s);
  static Tensor rsub(double s, const Tensor& a);
  static Tensor pow(const Tensor& a, double e);
  static Tensor rsqrt(const Tensor& a);
  static Tensor abs(const Tensor& a);
  static Tensor sign(const Tensor& a);
  static Tensor sigmoid(const Tensor& a);
  static Tensor silu(const Tensor& a);
  static Tensor detach(const Tensor& a);
  static Tensor mean_last(const Tensor& a);
  static Tensor clone(const Tensor& a) { return torch::stable::clone(a); }
  static Tensor sum(const Tensor& a, const std::vector<int64_t>& axes);
  static Tensor first_of_last(const Tensor& a);
  static Tensor movedim(const Tensor& a, int64_t from, int64_t to);
  static Tensor unflatten_last(const Tensor& a, int64_t g);
  static Tensor flatten_last(const Tensor& a);
  static Tensor flat(const Tensor& a);
  static Tensor compute(const Tensor& t, const Tensor& input);
  static Tensor like_type(const Tensor& t, const Tensor& like);
  static int64_t dim(const Tensor& a) { return a.dim(); }
};

/// A parameter as the formulations take it: nullptr where absent.
inline const Tensor* present(const OptionalTensor& t) { return t.has_value() ? &*t : nullptr; }

}  // namespace pln::stable
