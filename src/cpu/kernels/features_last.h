#pragma once
// The features-last path (NC, NTC, NHWC, channels-last NCHW): groups of G
// contiguous features, eight float (four double) groups at a time with AVX2,
// other group sizes and the rest of a row in scalar loops.
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <cstdint>
#include <type_traits>

#include "cpu/kernels/simd.h"

#include "cpu/capability.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// The scalar forward of groups of G contiguous features (the features-last
// layouts: NC, NTC, NHWC and channels-last NCHW); group k of the row uses
// weight[k * G ...]. kG > 0 fixes the group size at compile time, so the loops
// over a group unroll. The formula is the forward's (cpu/kernels.cpp).
template <typename T, bool kCenter, int kG = 0>
void forward_groups(const T* x, T* y, int64_t ngroups, int64_t G_rt, const T* w, const T* b,
                    T* mean, T* rstd, T eps) {
  const int64_t G = kG ? kG : G_rt;
  const T inv_g = T(1) / T(G);
  for (int64_t k = 0; k < ngroups; ++k) {
    const T* xk = x + k * G;
    // As forward_chunk, with the shift s = xk[0].
    T m = T(0), v = T(0);
    if (kCenter) {
      for (int64_t j = 1; j < G; ++j) m += xk[j] - xk[0];
      m *= inv_g;
    }
    const auto centred = [&](int64_t j) { return kCenter ? (xk[j] - xk[0]) - m : xk[j]; };
    for (int64_t j = 0; j < G; ++j) v += centred(j) * centred(j);
    const T r = inv_sqrt(v * inv_g + eps);
    for (int64_t j = 0; j < G; ++j) y[k * G + j] = centred(j) * (r * w[k * G + j]) + b[k * G + j];
    mean[k] = kCenter ? xk[0] + m : T(0);
    rstd[k] = r;
  }
}

#if PLN_HAVE_AVX2

// Mean and 1/std of eight consecutive groups of 4 float features; `shifted`
// gets each group's mean less its first value (the shift, e[0]). Scalar twin:
// the statistics of forward_groups<float, kCenter, 4>, two passes as there
// (mean_j(xc_j^2) from the centred values, not mean(d^2) - m^2).
template <bool kCenter>
inline void stats_quads_avx2(const float* x, float* mean, float* shifted, float* rstd, float eps) {
  __m256 e[4];
  Quads::load(x, e);
  const __m256 quarter = _mm256_set1_ps(0.25f);
  __m256 m = _mm256_setzero_ps();
  if (kCenter) {
    for (int i = 1; i < 4; ++i) e[i] = _mm256_sub_ps(e[i], e[0]);
    m = _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(e[1], e[2]), e[3]), quarter);
  }
  __m256 v = kCenter ? _mm256_mul_ps(m, m) : _mm256_mul_ps(e[0], e[0]);
  for (int i = 1; i < 4; ++i) {
    const __m256 d = _mm256_sub_ps(e[i], m);
    v = _mm256_fmadd_ps(d, d, v);
  }
  const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                 _mm256_sqrt_ps(_mm256_fmadd_ps(v, quarter, _mm256_set1_ps(eps))));
  if (kCenter) {
    _mm256_storeu_ps(mean, _mm256_permutevar8x32_ps(_mm256_add_ps(e[0], m), Quads::to_groups()));
    _mm256_storeu_ps(shifted, _mm256_permutevar8x32_ps(m, Quads::to_groups()));
  } else {
    _mm256_storeu_ps(mean, m);
  }
  _mm256_storeu_ps(rstd, _mm256_permutevar8x32_ps(r, Quads::to_groups()));
}

// The output of eight consecutive groups of 4 float features from their
// statistics: register i holds groups 2i and 2i + 1. kStream: as in
// apply_groups_avx2. Scalar twin: the output loop of
// forward_groups<float, kCenter, 4>, as y_j = fmadd(xc_j * rstd, w_j, b_j).
template <bool kCenter, bool kStream>
inline void apply_quads_avx2(const float* x, float* y, const float* w, const float* b,
                             const float* shifted, const float* rstd) {
  const __m256 m8 = kCenter ? _mm256_loadu_ps(shifted) : _mm256_setzero_ps(), r8 = _mm256_loadu_ps(rstd);
  for (int i = 0; i < 4; ++i) {
    const int lo = 2 * i, hi = 2 * i + 1;
    const __m256i pick = _mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi);
    const __m256 m = _mm256_permutevar8x32_ps(m8, pick), r = _mm256_permutevar8x32_ps(r8, pick);
    __m256 xv = _mm256_loadu_ps(x + 8 * i);
    if (kCenter) xv = _mm256_sub_ps(_mm256_sub_ps(xv, _mm256_permute_ps(xv, 0x00)), m);
    const __m256 xn = _mm256_mul_ps(xv, r);
    const __m256 out = _mm256_fmadd_ps(xn, _mm256_loadu_ps(w + 8 * i), _mm256_loadu_ps(b + 8 * i));
    if (kStream) {
      _mm256_stream_ps(y + 8 * i, out);
    } else {
      _mm256_storeu_ps(y + 8 * i, out);
    }
  }
}

// The backward of eight consecutive groups of 4 float features, in the
// transposed layout of Quads. Scalar twin: backward_groups<float, kCenter, 4>
// (dweight/dbias added to this task's float partials as there).
template <bool kCenter>
inline void backward_quads_avx2(const float* dy, const float* x, const float* mean, const float* rstd,
                                const float* w, float* dx, float* dw, float* db) {
  __m256 xe[4], dye[4], we[4];
  Quads::load(x, xe);
  Quads::load(dy, dye);
  Quads::load(w, we);
  const __m256 m = _mm256_permutevar8x32_ps(_mm256_loadu_ps(mean), Quads::to_lanes());
  const __m256 r = _mm256_permutevar8x32_ps(_mm256_loadu_ps(rstd), Quads::to_lanes());
  __m256 yv[4], gy[4];
  for (int i = 0; i < 4; ++i) yv[i] = _mm256_sub_ps(xe[i], m);
  if (kCenter) {  // re-centred (see backward_chunk)
    const __m256 b = _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(yv[0], yv[1]), _mm256_add_ps(yv[2], yv[3])),
                                   _mm256_set1_ps(0.25f));
    for (int i = 0; i < 4; ++i) yv[i] = _mm256_sub_ps(yv[i], b);
  }
  __m256 a = _mm256_setzero_ps(), c = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    yv[i] = _mm256_mul_ps(yv[i], r);
    gy[i] = _mm256_mul_ps(dye[i], we[i]);
    a = _mm256_add_ps(a, gy[i]);
    c = _mm256_fmadd_ps(gy[i], yv[i], c);
  }
  if (dw) {
    __m256 pw[4];
    for (int i = 0; i < 4; ++i) pw[i] = _mm256_mul_ps(dye[i], yv[i]);
    Quads::add_to(pw, dw);
    Quads::add_to(dye, db);
  }
  if (!dx) return;
  const __m256 quarter = _mm256_set1_ps(0.25f);
  a = kCenter ? _mm256_mul_ps(a, quarter) : _mm256_setzero_ps();
  c = _mm256_mul_ps(c, quarter);
  for (int i = 0; i < 4; ++i) gy[i] = _mm256_mul_ps(r, _mm256_fnmadd_ps(yv[i], c, _mm256_sub_ps(gy[i], a)));
  Quads::store(gy, dx);
}

// Mean and 1/std of kLanes consecutive groups of G = kLanes * V contiguous
// features (kV = 0: V at run time), from values shifted by their group's first
// value, in two passes: the mean of the shifted values, then the mean square
// about it. One pass (mean(d^2) - m^2) needs one transposing sum fewer but
// loses bits as (m / std)^2 grows: up to about four times ATen's error at g = 8
// and 16. `shifted` gets the mean of the shifted values,
// which the output pass subtracts after the shift; the true mean is completed
// there. Scalar twin: the statistics of forward_groups.
template <typename T, bool kCenter, int kV>
inline void stats_groups_avx2(const T* x, T* shifted, T* rstd, int64_t V_rt, T eps) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  const Vec inv_g = L::set1(T(1) / T(G));
  const auto shifted_value = [&](int l, int64_t v) {
    const Vec xv = L::load(x + l * G + kL * v);
    return kCenter ? L::sub(xv, L::bcast(x + l * G)) : xv;
  };
  Vec m_shifted = L::zero();
  if (kCenter) {
    Vec s1[kL];
#pragma GCC unroll 8
    for (int l = 0; l < kL; ++l) {
      Vec a = shifted_value(l, 0);
      for (int64_t v = 1; v < V; ++v) a = L::add(a, shifted_value(l, v));
      s1[l] = a;
    }
    m_shifted = L::mul(transpose_sum<L>(s1), inv_g);
  }
  L::store(shifted, m_shifted);
  Vec s2[kL];
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const Vec m_l = L::bcast(shifted + l);
    Vec q = L::zero();
    for (int64_t v = 0; v < V; ++v) {
      const Vec c = kCenter ? L::sub(shifted_value(l, v), m_l) : shifted_value(l, v);
      q = L::fmadd(c, c, q);
    }
    s2[l] = q;
  }
  const Vec var = L::mul(transpose_sum<L>(s2), inv_g);
  L::store(rstd, L::rsqrt(L::add(var, L::set1(eps))));
}

// Mean and 1/std of eight float groups of 8, two passes as stats_groups_avx2 but
// transposed first (register j holding feature j of every group), so that
// both sums are vertical, in trees: fewer shuffles than two transposing sums
// and no broadcast of the means between them. Scalar twin: the statistics of
// forward_groups<float, kCenter, 8>.
template <bool kCenter>
inline void stats_octets_avx2(const float* x, float* shifted, float* rstd, float eps) {
  __m256 t[8];
  transpose8(x, t);
  const __m256 inv_g = _mm256_set1_ps(0.125f);
  __m256 m = _mm256_setzero_ps();
  if (kCenter) {
    for (int j = 1; j < 8; ++j) t[j] = _mm256_sub_ps(t[j], t[0]);
    t[0] = _mm256_setzero_ps();
    const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[1], t[2]), _mm256_add_ps(t[3], t[4])),
                                   _mm256_add_ps(_mm256_add_ps(t[5], t[6]), t[7]));
    m = _mm256_mul_ps(s, inv_g);
    for (int j = 0; j < 8; ++j) t[j] = _mm256_sub_ps(t[j], m);
  }
  __m256 q[4];
  for (int i = 0; i < 4; ++i) q[i] = _mm256_fmadd_ps(t[2 * i], t[2 * i], _mm256_mul_ps(t[2 * i + 1], t[2 * i + 1]));
  const __m256 sumsq = _mm256_add_ps(_mm256_add_ps(q[0], q[1]), _mm256_add_ps(q[2], q[3]));
  _mm256_storeu_ps(shifted, m);
  _mm256_storeu_ps(rstd, _mm256_div_ps(_mm256_set1_ps(1.f),
                                       _mm256_sqrt_ps(_mm256_fmadd_ps(sumsq, inv_g, _mm256_set1_ps(eps)))));
}

// The output of groups [0, NG) of G = kLanes * V contiguous features (kV = 0:
// V at run time) from their statistics, and their means unless `mean` is null
// (no backward will read them). kStream: y is 32-byte aligned and the output
// too large to stay in cache, so it is written with non-temporal stores.
// Scalar twin: the output loop of forward_groups, as y_j = fmadd(xc_j * rstd, w_j, b_j).
template <typename T, bool kCenter, int kV, bool kStream>
inline void apply_groups_avx2(const T* x, T* y, const T* w, const T* b, const T* shifted,
                              const T* rstd, T* mean, int64_t NG, int64_t V_rt) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  for (int64_t k = 0; k < NG; ++k) {
    const Vec s = L::bcast(x + k * G), m = L::bcast(shifted + k), r = L::bcast(rstd + k);
    if (mean) mean[k] = kCenter ? x[k * G] + shifted[k] : T(0);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t c = k * G + kL * v;
      const Vec xc = kCenter ? L::sub(L::sub(L::load(x + c), s), m) : L::load(x + c);
      const Vec xn = L::mul(xc, r);
      const Vec out = L::fmadd(xn, L::load(w + c), L::load(b + c));
      if (kStream) {
        L::stream(y + c, out);
      } else {
        L::store(y + c, out);
      }
    }
  }
}
#endif  // PLN_HAVE_AVX2

// The scalar backward of groups of G contiguous features (as forward_groups).
template <typename T, bool kCenter, int kG = 0>
void backward_groups(const T* dy, const T* x, int64_t NG, int64_t G_rt, const T* mean,
                     const T* rstd, const T* w, T* dx, T* dw, T* db) {
  const int64_t G = kG ? kG : G_rt;
  const T inv_g = T(1) / T(G);
  for (int64_t k = 0; k < NG; ++k) {
    // As backward_chunk, for one group.
    const int64_t o = k * G;
    const T m = mean[k], r = rstd[k];
    T a = T(0), b = T(0), c = T(0);
    for (int64_t j = 0; j < G; ++j) {
      const T d = x[o + j] - m;
      const T gy = dy[o + j] * w[o + j];
      a += gy;
      if (kCenter) b += d;
      c += gy * d;
    }
    a *= inv_g;
    b = kCenter ? b * inv_g : T(0);
    c = r * (c * inv_g - b * a);
    if (!kCenter) a = T(0);
    for (int64_t j = 0; j < G; ++j) {
      const T yv = ((x[o + j] - m) - b) * r;
      if (dx) dx[o + j] = r * (dy[o + j] * w[o + j] - a - yv * c);
      if (dw) dw[o + j] += dy[o + j] * yv, db[o + j] += dy[o + j];
    }
  }
}

#if PLN_HAVE_AVX2
// The backward of kLanes consecutive groups of G = kLanes * V contiguous
// features (kV = 0: V at run time); dw/db are this task's partial sums for the
// same features. Scalar twin: backward_groups (the sums a, b, c per group).
template <typename T, bool kCenter, int kV>
inline void backward_groups_avx2(const T* dy, const T* x, const T* mean, const T* rstd,
                                 const T* w, T* dx, T* dw, T* db, int64_t V_rt) {
  using L = Lanes<T>;
  using Vec = typename L::V;
  constexpr int kL = L::kLanes;
  const int64_t V = kV ? kV : V_rt;
  const int64_t G = kL * V;
  // Per group (lane l after the transposing sums): sum gy, sum d and sum gy * d
  // with d = x - mean; see backward_chunk. A group of one register (V = 1)
  // shares the first transpose step between the three.
  Vec sum_gy[kL], sum_gyd[kL], sum_d[kL];
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const Vec mu_l = L::bcast(mean + l);
    Vec a = L::zero(), c = L::zero(), e = L::zero();
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const Vec d = L::sub(L::load(x + o), mu_l);
      const Vec gy = L::mul(L::load(dy + o), L::load(w + o));
      if (kV == 1) {
        a = gy, e = d;
      } else {
        a = L::add(a, gy);
        c = L::fmadd(gy, d, c);
        if (kCenter) e = L::add(e, d);
      }
    }
    sum_gy[l] = a;
    sum_gyd[l] = c;
    sum_d[l] = e;
  }
  Vec total_gy, total_d, total_gyd;
  if (kV == 1) {
    transpose_sum3<L>(sum_gy, sum_d, total_gy, total_d, total_gyd);
  } else {
    total_gy = transpose_sum<L>(sum_gy);
    total_d = kCenter ? transpose_sum<L>(sum_d) : L::zero();
    total_gyd = transpose_sum<L>(sum_gyd);
  }
  const Vec inv_g = L::set1(T(1) / T(G));
  const Vec mean_gy = L::mul(total_gy, inv_g);
  const Vec mean_d = kCenter ? L::mul(total_d, inv_g) : L::zero();
  const Vec mean_gyy = L::mul(L::load(rstd), L::fnmadd(mean_d, mean_gy, L::mul(total_gyd, inv_g)));
  alignas(32) T a_[kL], b_[kL], c_[kL];
  L::store(a_, kCenter ? mean_gy : L::zero());
  L::store(b_, mean_d);
  L::store(c_, mean_gyy);
#pragma GCC unroll 8
  for (int l = 0; l < kL; ++l) {
    const Vec mu_l = L::bcast(mean + l), r_l = L::bcast(rstd + l);
    const Vec a_l = L::bcast(a_ + l), b_l = L::bcast(b_ + l), c_l = L::bcast(c_ + l);
    for (int64_t v = 0; v < V; ++v) {
      const int64_t o = l * G + kL * v;
      const Vec dyv = L::load(dy + o);
      const Vec yv = L::mul(L::sub(L::sub(L::load(x + o), mu_l), b_l), r_l);
      if (dx) {
        const Vec gy_a = L::fmsub(dyv, L::load(w + o), a_l);
        L::store(dx + o, L::mul(r_l, L::fnmadd(yv, c_l, gy_a)));
      }
      if (dw) {
        L::store(dw + o, L::fmadd(dyv, yv, L::load(dw + o)));
        L::store(db + o, L::add(dyv, L::load(db + o)));
      }
    }
  }
}
#endif  // PLN_HAVE_AVX2

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
