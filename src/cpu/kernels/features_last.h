#pragma once
// Small groups of contiguous features (NC, NTC, NHWC, channels-last NCHW),
// several groups a register: kLanes groups at a time, each group's sums
// reduced across the lanes (transpose_sum) or, where a group is one register,
// after a transposition of the block (its sums then vertical). One template
// a kernel over the vocabulary type W; with ScalarVec (one lane) the same
// code is the portable kernel, one group at a time. Float groups of 4 on
// AVX2 take a kernel of their own (quads, below), float groups of 8 on
// AVX-512 the block kernel of octets.h.
//
// Statistics take two passes over the group (the mean of the values shifted
// by the group's first value, then the mean square about it): one pass,
// mean(d^2) - m^2, needs one reduction fewer but loses bits as (m / std)^2
// grows (up to four times ATen's error at g = 8 and 16). The formulas: see
// cpu/kernels.cpp. x, y, dy and dx are stored as S (cpu/storage.h); weight,
// bias, the statistics and the partial sums of dweight and dbias are W's T.
//
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cstdint>
#include <type_traits>

#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// The sum of v[0..N) in a tree: halves, the larger first, added in pairs.
// N at compile time, so that the tree unrolls into registers (with N at run
// time GCC leaves the recursion a call, the block spilled to memory).
template <typename W, int N>
inline typename W::V tree_sum(const typename W::V* v) {
  if constexpr (N == 1) {
    return v[0];
  } else {
    constexpr int kLeft = N - N / 2;
    return W::add(tree_sum<W, kLeft>(v), tree_sum<W, N / 2>(v + kLeft));
  }
}

// The shifted means and 1/std of kLanes consecutive groups of G = kLanes * V
// contiguous features (kV = 0: V at run time); `shifted` gets each group's
// mean less its first value, which the output pass subtracts after the shift.
template <typename W, bool kCenter, int kV, typename S>
inline void stats_groups(const S* x, typename W::Value* shifted, typename W::Value* rstd, int64_t V_rt,
                         typename W::Value eps) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  const R inv_g = W::set1(T(1) / T(G));
  const auto shifted_value = [&](int l, int64_t v) {
    const R xv = W::load(x + l * G + kL * v);
    return kCenter ? W::sub(xv, W::set1(widen(x[l * G]))) : xv;
  };
  R m_shifted = W::zero();
  if (kCenter) {
    R s1[kL];
#pragma GCC unroll 8
    for (int l = 0; l < kL; ++l) {
      R a = shifted_value(l, 0);
      for (int64_t v = 1; v < V; ++v) a = W::add(a, shifted_value(l, v));
      s1[l] = a;
    }
    m_shifted = W::mul(transpose_sum<W>(s1), inv_g);
  }
  W::store(shifted, m_shifted);
  R s2[kL];
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const R m_l = W::set1(shifted[l]);
    R q = W::zero();
    for (int64_t v = 0; v < V; ++v) {
      const R c = kCenter ? W::sub(shifted_value(l, v), m_l) : shifted_value(l, v);
      q = W::fmadd(c, c, q);
    }
    s2[l] = q;
  }
  const R var = W::mul(transpose_sum<W>(s2), inv_g);
  W::store(rstd, W::div(W::set1(T(1)), W::sqrt(W::add(var, W::set1(eps)))));
}

// The same for kLanes groups of kLanes features: the block transposed, so
// that register j holds feature j of every group and both sums are
// vertical, in trees (fewer shuffles than two transposing sums, and no
// broadcast of the means between them).
template <typename W, bool kCenter, typename S>
inline void stats_transposed(const S* x, typename W::Value* shifted, typename W::Value* rstd,
                             typename W::Value eps) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  R t[kL];
  for (int j = 0; j < kL; ++j) t[j] = W::load(x + kL * j);
  W::transpose(t);
  const R inv_g = W::set1(T(1) / T(kL));
  R m = W::zero();
  if (kCenter) {
    for (int j = 1; j < kL; ++j) t[j] = W::sub(t[j], t[0]);
    t[0] = W::zero();
    m = W::mul(tree_sum<W, kL - 1>(t + 1), inv_g);
    for (int j = 0; j < kL; ++j) t[j] = W::sub(t[j], m);
  }
  R q[kL / 2];
  for (int i = 0; i < kL / 2; ++i) q[i] = W::fmadd(t[2 * i], t[2 * i], W::mul(t[2 * i + 1], t[2 * i + 1]));
  W::store(shifted, m);
  W::store(rstd, W::div(W::set1(T(1)), W::sqrt(W::fmadd(tree_sum<W, kL / 2>(q), inv_g, W::set1(eps)))));
}

// The output of groups [0, NG) of G = kLanes * V contiguous features (kV = 0:
// V at run time) from their statistics, and their means unless `mean` is
// null (no backward will read them): y_j = fmadd(xc_j * rstd, w_j, b_j).
// kStream: y is aligned to a register and the output too large to stay in
// cache, so it is written around it.
template <typename W, bool kCenter, int kV, bool kStream, typename S>
inline void apply_groups(const S* x, S* y, const typename W::Value* w, const typename W::Value* b,
                         const typename W::Value* shifted, const typename W::Value* rstd, typename W::Value* mean,
                         int64_t NG, int64_t V_rt) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  for (int64_t k = 0; k < NG; ++k) {
    const T first = widen(x[k * G]);
    const R s = W::set1(first), m = W::set1(shifted[k]), r = W::set1(rstd[k]);
    if (mean) mean[k] = kCenter ? first + shifted[k] : T(0);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t c = k * G + kL * v;
      const R xc = kCenter ? W::sub(W::sub(W::load(x + c), s), m) : W::load(x + c);
      const R out = W::fmadd(W::mul(xc, r), W::load(w + c), W::load(b + c));
      kStream ? W::stream(y + c, out) : W::store(y + c, out);
    }
  }
}

// The backward of kLanes consecutive groups of G = kLanes * V contiguous
// features (kV = 0: V at run time); dw/db are this task's partial sums for
// the same features. Per group: sum gy, sum d and sum gy d with d = x - mean
// (see cpu/kernels.cpp); a group of one register shares the first level of
// the three transposing sums.
template <typename W, bool kCenter, int kV, typename S>
inline void backward_groups(const S* dy, const S* x, const typename W::Value* mean, const typename W::Value* rstd,
                            const typename W::Value* w, S* dx, typename W::Value* dw, typename W::Value* db,
                            int64_t V_rt) {
  using T = typename W::Value;
  using R = typename W::V;
  constexpr int kL = W::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  R sum_gy[kL], sum_gyd[kL], sum_d[kL];
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const R mu_l = W::set1(mean[l]);
    R a = W::zero(), c = W::zero(), e = W::zero();
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const R d = W::sub(W::load(x + o), mu_l);
      const R gy = W::mul(W::load(dy + o), W::load(w + o));
      if (kV == 1) {
        a = gy, e = d;
      } else {
        a = W::add(a, gy);
        c = W::fmadd(gy, d, c);
        if (kCenter) e = W::add(e, d);
      }
    }
    sum_gy[l] = a;
    sum_gyd[l] = c;
    sum_d[l] = e;
  }
  R total_gy, total_d, total_gyd;
  if (kV == 1) {
    transpose_sum3<W>(sum_gy, sum_d, total_gy, total_d, total_gyd);
  } else {
    total_gy = transpose_sum<W>(sum_gy);
    total_d = kCenter ? transpose_sum<W>(sum_d) : W::zero();
    total_gyd = transpose_sum<W>(sum_gyd);
  }
  const R inv_g = W::set1(T(1) / T(G));
  const R mean_gy = W::mul(total_gy, inv_g);
  const R mean_d = kCenter ? W::mul(total_d, inv_g) : W::zero();
  const R mean_gyy = W::mul(W::load(rstd), W::fnmadd(mean_d, mean_gy, W::mul(total_gyd, inv_g)));
  T a_[kL], b_[kL], c_[kL];
  W::store(a_, kCenter ? mean_gy : W::zero());
  W::store(b_, mean_d);
  W::store(c_, mean_gyy);
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const R mu_l = W::set1(mean[l]), r_l = W::set1(rstd[l]);
    const R a_l = W::set1(a_[l]), b_l = W::set1(b_[l]), c_l = W::set1(c_[l]);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const R dyv = W::load(dy + o);
      const R yv = W::mul(W::sub(W::sub(W::load(x + o), mu_l), b_l), r_l);
      if (dx) W::store(dx + o, W::mul(r_l, W::fnmadd(yv, c_l, W::fmsub(dyv, W::load(w + o), a_l))));
      if (dw) {
        W::store(dw + o, W::fmadd(dyv, yv, W::load(dw + o)));
        W::store(db + o, W::add(dyv, W::load(db + o)));
      }
    }
  }
}

// ------------------------------------------------------ groups of 4, AVX2 ---
// Float groups of 4 are half an AVX2 register: eight groups (four registers)
// are transposed (quads_in) so that per-group sums are vertical; the output
// is written from x as it lies, each register's two groups' statistics
// spread over their lanes (quads_spread).

template <typename W>
inline constexpr bool kHasQuads = W::kLanes == 8 && std::is_same_v<typename W::Value, float>;

// The means, shifted means and 1/std of eight consecutive groups of 4.
template <typename W, bool kCenter, typename S>
inline void stats_quads(const S* x, float* mean, float* shifted, float* rstd, float eps) {
  using R = typename W::V;
  R e[4];
  for (int i = 0; i < 4; ++i) e[i] = W::load(x + 8 * i);
  W::quads_in(e);
  const R quarter = W::set1(0.25f);
  R m = W::zero();
  if (kCenter) {
    for (int i = 1; i < 4; ++i) e[i] = W::sub(e[i], e[0]);
    m = W::mul(W::add(W::add(e[1], e[2]), e[3]), quarter);
  }
  R v = kCenter ? W::mul(m, m) : W::mul(e[0], e[0]);
  for (int i = 1; i < 4; ++i) {
    const R d = W::sub(e[i], m);
    v = W::fmadd(d, d, v);
  }
  const R r = W::div(W::set1(1.f), W::sqrt(W::fmadd(v, quarter, W::set1(eps))));
  if (kCenter) {
    W::store(mean, W::quads_to_groups(W::add(e[0], m)));
    W::store(shifted, W::quads_to_groups(m));
  } else {
    W::store(mean, m);
  }
  W::store(rstd, W::quads_to_groups(r));
}

// The output of eight consecutive groups of 4 from their statistics: y_j = fmadd(xc_j * rstd, w_j, b_j).
template <typename W, bool kCenter, bool kStream, typename S>
inline void apply_quads(const S* x, S* y, const float* w, const float* b, const float* shifted, const float* rstd) {
  using R = typename W::V;
  const R m8 = kCenter ? W::load(shifted) : W::zero(), r8 = W::load(rstd);
  for (int i = 0; i < 4; ++i) {
    const R m = W::quads_spread(m8, i), r = W::quads_spread(r8, i);
    R xv = W::load(x + 8 * i);
    if (kCenter) xv = W::sub(W::sub(xv, W::quads_first(xv)), m);
    const R out = W::fmadd(W::mul(xv, r), W::load(w + 8 * i), W::load(b + 8 * i));
    kStream ? W::stream(y + 8 * i, out) : W::store(y + 8 * i, out);
  }
}

// The backward of eight consecutive groups of 4 (dweight/dbias added to the
// task's partial sums, as backward_groups does).
template <typename W, bool kCenter, typename S>
inline void backward_quads(const S* dy, const S* x, const float* mean, const float* rstd, const float* w, S* dx,
                           float* dw, float* db) {
  using R = typename W::V;
  R xe[4], dye[4], we[4];
  for (int i = 0; i < 4; ++i) {
    xe[i] = W::load(x + 8 * i), dye[i] = W::load(dy + 8 * i), we[i] = W::load(w + 8 * i);
  }
  W::quads_in(xe), W::quads_in(dye), W::quads_in(we);
  const R m = W::quads_to_lanes(W::load(mean)), r = W::quads_to_lanes(W::load(rstd));
  R yv[4], gy[4];
  for (int i = 0; i < 4; ++i) yv[i] = W::sub(xe[i], m);
  if (kCenter) {  // re-centred on the mean of x - mean (see cpu/kernels.cpp)
    const R b = W::mul(W::add(W::add(yv[0], yv[1]), W::add(yv[2], yv[3])), W::set1(0.25f));
    for (int i = 0; i < 4; ++i) yv[i] = W::sub(yv[i], b);
  }
  R a = W::zero(), c = W::zero();
  for (int i = 0; i < 4; ++i) {
    yv[i] = W::mul(yv[i], r);
    gy[i] = W::mul(dye[i], we[i]);
    a = W::add(a, gy[i]);
    c = W::fmadd(gy[i], yv[i], c);
  }
  if (dw) {
    R pw[4];
    for (int i = 0; i < 4; ++i) pw[i] = W::mul(dye[i], yv[i]);
    W::quads_out(pw), W::quads_out(dye);
    for (int i = 0; i < 4; ++i) {
      W::store(dw + 8 * i, W::add(W::load(dw + 8 * i), pw[i]));
      W::store(db + 8 * i, W::add(W::load(db + 8 * i), dye[i]));
    }
  }
  if (!dx) return;
  const R quarter = W::set1(0.25f);
  a = kCenter ? W::mul(a, quarter) : W::zero();
  c = W::mul(c, quarter);
  for (int i = 0; i < 4; ++i) gy[i] = W::mul(r, W::fnmadd(yv[i], c, W::sub(gy[i], a)));
  W::quads_out(gy);
  for (int i = 0; i < 4; ++i) W::store(dx + 8 * i, gy[i]);
}

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
