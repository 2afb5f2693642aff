#pragma once
// The composite formulations of the ops (any p, device and dtype,
// differentiable to any order), written once over a library's tensor maths
// `M`: ATen's for libpln (ops/aten_maths.h), the stable ABI's for
// libpln_stable (stable/maths.h). A formulation takes checked arguments and
// reads no size: the feature axis is moved last and unflattened into groups,
// so that libpln_stable runs it on symbolic shapes too (torch.compile,
// export), where the stable ABI cannot read a size. Each computes in the
// input's compute type (float for float16 and bfloat16) and rounds once to
// its dtype, as the fused kernels do.
//
// What `M` provides, each on M::Tensor: add, sub, mul, div; add(t, double),
// rsub(double, t) (s - t) and pow(t, double); rsqrt, abs, sign, sigmoid, silu,
// detach, clone; mean_last (keeping the axis), sum(t, axes) (over a non-empty
// list of axes), first_of_last (the last axis' first entry);
// movedim, unflatten_last(t, g) ([..., C] as [..., C / g, g]), flatten_last
// (its inverse), flat ([numel]); compute(t, input) (t in the input's compute
// type), like_type(t, like) (t in like's dtype); dim.

#include <cstdint>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace pln::formulation {

/// A tensor of the maths M, with the arithmetic the formulations are written in.
template <class M>
class Value {
 public:
  using Tensor = typename M::Tensor;
  Value(Tensor t) : t_(std::move(t)) {}  // NOLINT(google-explicit-constructor): M's results convert
  const Tensor& get() const { return t_; }

  friend Value operator+(const Value& a, const Value& b) { return M::add(a.t_, b.t_); }
  friend Value operator-(const Value& a, const Value& b) { return M::sub(a.t_, b.t_); }
  friend Value operator*(const Value& a, const Value& b) { return M::mul(a.t_, b.t_); }
  friend Value operator/(const Value& a, const Value& b) { return M::div(a.t_, b.t_); }
  friend Value operator+(const Value& a, double s) { return M::add(a.t_, s); }
  friend Value operator+(double s, const Value& a) { return M::add(a.t_, s); }
  friend Value operator-(double s, const Value& a) { return M::rsub(s, a.t_); }

  friend Value pow(const Value& a, double e) { return M::pow(a.t_, e); }
  friend Value rsqrt(const Value& a) { return M::rsqrt(a.t_); }
  friend Value abs(const Value& a) { return M::abs(a.t_); }
  friend Value sign(const Value& a) { return M::sign(a.t_); }
  friend Value sigmoid(const Value& a) { return M::sigmoid(a.t_); }
  friend Value silu(const Value& a) { return M::silu(a.t_); }
  friend Value mean_last(const Value& a) { return M::mean_last(a.t_); }

 private:
  Tensor t_;
};

/// The groups of `grouped` (the last axis) less their means, each shifted by
/// one of its own values first, as the fused kernels do: g - mean(g) would
/// round at a common offset's magnitude and leave the centred values
/// off-centre, an error every derivative multiplies by 1/std once more. The
/// result does not depend on the shift, which therefore carries no gradient.
template <class M>
Value<M> centred(const Value<M>& grouped) {
  const Value<M> shifted = grouped - Value<M>(M::detach(M::first_of_last(grouped.get())));
  return shifted - mean_last(shifted);
}

/// The sum of t over its first n axes: a result of its own, a copy where n = 0
/// (never a view of an input).
template <class M>
typename M::Tensor sum_leading(const typename M::Tensor& t, int64_t n) {
  if (n == 0) return M::clone(t);
  std::vector<int64_t> axes(static_cast<size_t>(n));
  std::iota(axes.begin(), axes.end(), 0);
  return M::sum(t, axes);
}

/// A parallel norm's grouping, checked: the feature axis, the group size, eps,
/// centring and PQNorm's exponents (p = q = 2: Parallel LN).
struct Grouping {
  int64_t axis;
  int64_t num_per_group;
  double eps;
  bool centering;
  double p = 2.0;
  double q = 2.0;
};

/// `t` (shaped like the input) in the input's compute type, features last, in groups: [..., groups, g].
template <class M>
Value<M> grouped(const typename M::Tensor& t, const typename M::Tensor& input, const Grouping& s) {
  return M::unflatten_last(M::movedim(M::compute(t, input), s.axis, -1), s.num_per_group);
}

/// The inverse of grouped, in the input's dtype.
template <class M>
typename M::Tensor ungrouped(const Value<M>& g, const typename M::Tensor& input, const Grouping& s) {
  return M::like_type(M::movedim(M::flatten_last(g.get()), -1, s.axis), input);
}

/// An affine parameter ([C], or any shape of C values) in the input's compute type, as [C].
template <class M>
Value<M> parameter(const typename M::Tensor& p, const typename M::Tensor& input) {
  return M::flat(M::compute(p, input));
}

/// Parallel LN, or PQNorm beyond p = q = 2. weight and bias: nullptr where absent.
template <class M>
typename M::Tensor parallel_ln(const typename M::Tensor& input, const typename M::Tensor* weight,
                               const typename M::Tensor* bias, const Grouping& s) {
  using V = Value<M>;
  const V xg = grouped<M>(input, input, s);
  const V xc = s.centering ? centred(xg) : xg;
  V y = xc;
  if (s.p == 2.0 && s.q == 2.0) {
    y = xc * rsqrt(mean_last(xc * xc) + s.eps);
  } else {
    const V stat = mean_last(pow(abs(xc), s.p));
    const V numer = s.p == s.q ? xc : sign(xc) * pow(abs(xc), s.p / s.q);
    y = numer / pow(stat + s.eps, 1.0 / s.q);
  }
  // The parameters apply on the last axis, before the features go back to theirs.
  V out = M::flatten_last(y.get());
  if (weight) out = out * parameter<M>(*weight, input);
  if (bias) out = out + parameter<M>(*bias, input);
  return M::like_type(M::movedim(out.get(), -1, s.axis), input);
}

/// Parallel LN's (p = 2) gradients as differentiable ops, so that a
/// create_graph backward through the fused op can itself be differentiated:
/// (grad_input, grad_weight [C], grad_bias [C]), the parameters' in the
/// weight's dtype (the input's without one, computed with unit weights).
template <class M>
std::tuple<typename M::Tensor, typename M::Tensor, typename M::Tensor> parallel_ln_gradient(
    const typename M::Tensor& grad_output, const typename M::Tensor& input, const typename M::Tensor* weight,
    const Grouping& s) {
  using V = Value<M>;
  const V xg = grouped<M>(input, input, s), dyg = grouped<M>(grad_output, input, s);
  const V xc = s.centering ? centred(xg) : xg;
  const V rstd = rsqrt(mean_last(xc * xc) + s.eps);
  const V y = xc * rstd;
  const V gy = weight ? dyg * V(M::unflatten_last(parameter<M>(*weight, input).get(), s.num_per_group)) : dyg;
  V inner = gy - y * mean_last(gy * y);
  if (s.centering) inner = inner - mean_last(gy);
  const int64_t positions = M::dim(input) - 1;  // the axes of grouped before [groups, g]
  const auto& param_type = weight ? *weight : input;
  return {ungrouped<M>(rstd * inner, input, s),
          M::like_type(M::flat(sum_leading<M>((dyg * y).get(), positions)), param_type),
          M::like_type(M::flat(sum_leading<M>(dyg.get(), positions)), param_type)};
}

/// The gated norm's options, checked (features last).
struct Gating {
  int64_t num_per_group;
  double eps;
  bool centering;
  bool gate_before;  ///< norm(x * act(z)) (Mamba-2), else norm(x) * act(z) (Gated DeltaNet)
  bool sigmoid;      ///< act: the sigmoid, else SiLU
};

namespace gated_detail {

template <class M>
Value<M> activation(const Value<M>& z, const Gating& s) {
  return s.sigmoid ? sigmoid(z) : silu(z);
}

template <class M>
Value<M> activation_slope(const Value<M>& z, const Gating& s) {
  const Value<M> sg = sigmoid(z);
  return s.sigmoid ? sg * (1.0 - sg) : sg * (1.0 + z * (1.0 - sg));
}

// Each tensor in its own compute type, as the models' classes compute.
template <class M>
Value<M> wide(const typename M::Tensor& t) {
  return M::compute(t, t);
}

// The normalised groups of h ([..., groups, g]) and their 1/std.
template <class M>
std::pair<Value<M>, Value<M>> normalised(const Value<M>& hg, const Gating& s) {
  const Value<M> c = s.centering ? centred(hg) : hg;
  const Value<M> r = rsqrt(mean_last(c * c) + s.eps);
  return {c * r, r};
}

}  // namespace gated_detail

/// The gated norm: PLN or PLS over groups of the last axis, gated by act(z).
template <class M>
typename M::Tensor gated_norm(const typename M::Tensor& input, const typename M::Tensor& gate,
                              const typename M::Tensor* weight, const typename M::Tensor* bias, const Gating& s) {
  using V = Value<M>;
  using namespace gated_detail;
  const V x = wide<M>(input), a = activation(wide<M>(gate), s);
  const V h = s.gate_before ? x * a : x;
  V y = M::flatten_last(normalised(V(M::unflatten_last(h.get(), s.num_per_group)), s).first.get());
  if (weight) y = y * V(M::flat(wide<M>(*weight).get()));
  if (bias) y = y + V(M::flat(wide<M>(*bias).get()));
  if (!s.gate_before) y = y * a;
  return M::like_type(y.get(), input);
}

/// The gated norm's gradients as differentiable ops (a create_graph backward
/// differentiates them): (grad_input, grad_gate, grad_weight [C], grad_bias
/// [C]), all in the input's dtype.
template <class M>
std::tuple<typename M::Tensor, typename M::Tensor, typename M::Tensor, typename M::Tensor> gated_norm_gradient(
    const typename M::Tensor& grad_output, const typename M::Tensor& input, const typename M::Tensor& gate,
    const typename M::Tensor* weight, const typename M::Tensor* bias, const Gating& s) {
  using V = Value<M>;
  using namespace gated_detail;
  const auto in_groups = [&](const V& t) { return V(M::unflatten_last(t.get(), s.num_per_group)); };
  const auto in_rows = [](const V& t) { return V(M::flatten_last(t.get())); };
  const V x = wide<M>(input), z = wide<M>(gate), dy = wide<M>(grad_output);
  const V a = activation(z, s), da = activation_slope(z, s);
  const V h = s.gate_before ? x * a : x;
  const auto [n, r] = normalised(in_groups(h), s);
  const V dt = s.gate_before ? in_groups(dy) : in_groups(dy * a);
  std::optional<V> w;  // [groups, g]
  if (weight) w = in_groups(M::flat(wide<M>(*weight).get()));
  const V dn = w ? dt * *w : dt;
  V inner = dn - n * mean_last(dn * n);
  if (s.centering) inner = inner - mean_last(dn);
  const V dh = in_rows(r * inner);
  V dx = dh, dz = dh;
  if (s.gate_before) {
    dx = dh * a;
    dz = dh * x * da;
  } else {
    V t = w ? n * *w : n;
    if (bias) t = t + in_groups(M::flat(wide<M>(*bias).get()));
    dz = dy * in_rows(t) * da;
  }
  const int64_t rows = M::dim(input) - 1;  // the axes before [groups, g]
  return {M::like_type(dx.get(), input), M::like_type(dz.get(), input),
          M::like_type(M::flat(sum_leading<M>((dt * n).get(), rows)), input),
          M::like_type(M::flat(sum_leading<M>(dt.get(), rows)), input)};
}

}  // namespace pln::formulation
