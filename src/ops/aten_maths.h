#pragma once
// ATen's tensor maths as the shared formulations (ops/formulation.h) read
// them: libpln's composite formulations.

#include "ops/ops.h"

#include <ATen/ATen.h>

#include <vector>

namespace pln::ops {

struct AtenMaths {
  using Tensor = at::Tensor;
  static Tensor add(const Tensor& a, const Tensor& b) { return a + b; }
  static Tensor sub(const Tensor& a, const Tensor& b) { return a - b; }
  static Tensor mul(const Tensor& a, const Tensor& b) { return a * b; }
  static Tensor div(const Tensor& a, const Tensor& b) { return a / b; }
  static Tensor add(const Tensor& a, double s) { return a + s; }
  static Tensor rsub(double s, const Tensor& a) { return s - a; }
  static Tensor pow(const Tensor& a, double e) { return a.pow(e); }
  static Tensor rsqrt(const Tensor& a) { return a.rsqrt(); }
  static Tensor abs(const Tensor& a) { return a.abs(); }
  static Tensor sign(const Tensor& a) { return a.sign(); }
  static Tensor sigmoid(const Tensor& a) { return a.sigmoid(); }
  static Tensor silu(const Tensor& a) { return at::silu(a); }
  static Tensor detach(const Tensor& a) { return a.detach(); }
  static Tensor mean_last(const Tensor& a) { return a.mean(-1, /*keepdim=*/true); }
  static Tensor clone(const Tensor& a) { return a.clone(); }
  static Tensor sum(const Tensor& a, const std::vector<int64_t>& axes) { return a.sum(axes); }
  static Tensor first_of_last(const Tensor& a) { return a.narrow(-1, 0, 1); }
  static Tensor movedim(const Tensor& a, int64_t from, int64_t to) { return a.movedim(from, to); }
  static Tensor unflatten_last(const Tensor& a, int64_t g) { return a.unflatten(-1, {-1, g}); }
  static Tensor flatten_last(const Tensor& a) { return a.flatten(-2, -1); }
  static Tensor flat(const Tensor& a) { return a.reshape({-1}); }
  static Tensor compute(const Tensor& t, const Tensor& input) { return in_compute_type(t, input.scalar_type()); }
  static Tensor like_type(const Tensor& t, const Tensor& like) { return t.to(like.scalar_type()); }
  static int64_t dim(const Tensor& a) { return a.dim(); }
};

/// A parameter as the formulations take it: nullptr where absent.
inline const at::Tensor* present(const at::Tensor& t) { return t.defined() ? &t : nullptr; }
inline const at::Tensor* present(const OptionalTensor& t) { return t.has_value() ? present(*t) : nullptr; }

}  // namespace pln::ops
