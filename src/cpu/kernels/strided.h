#pragma once
// The inner-strided path (NCHW, NCL): a group's g rows lie a plane of `stride`
// positions apart, and the kernels run along the contiguous position axis with
// all g rows in step, one chunk of positions at a time.
// Part of the fused kernels of src/cpu/kernels.cpp, which alone includes it,
// inside its per-capability namespace (see cpu/capability.h).

#include <algorithm>
#include <cstdint>

#include "cpu/capability.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/vec.h"

namespace pln::cpu::PLN_CPU_NS {
namespace {

// Positions processed together along the inner axis: the g row segments of one
// chunk (g * kChunk values) stay in L1/L2 between the passes, and each row is
// read as one long stream, which keeps power-of-two plane sizes (32x32 images)
// from mapping every row of a group onto the same cache set.
constexpr int64_t kChunk = 512;

// The scalar forward of one chunk of n positions of one group (the inner-strided
// layouts: NCHW, NCL); row j of the group starts at x + j * stride. Per
// position, as the forward's formula (cpu/kernels.cpp):
//   m = mean_j(x_j - s),  r = 1 / sqrt(mean_j(((x_j - s) - m)^2) + eps)
//   y_j = ((x_j - s) - m) * r * w_j + b_j,  saved mean = s + m
template <typename T, bool kCenter>
void forward_chunk(const T* x, T* y, int64_t stride, int64_t n, int64_t G, const T* w,
                   const T* b, T* mean, T* rstd, T eps) {
  T m[kChunk], r[kChunk];
  const T inv_g = T(1) / T(G);
  for (int64_t i = 0; i < n; ++i) m[i] = T(0), r[i] = T(0);
  if (kCenter) {
    for (int64_t j = 1; j < G; ++j) {
      const T* xj = x + j * stride;
      for (int64_t i = 0; i < n; ++i) m[i] += xj[i] - x[i];
    }
    for (int64_t i = 0; i < n; ++i) m[i] *= inv_g;
  }
  const auto centred = [&](const T* xj, int64_t i) { return kCenter ? (xj[i] - x[i]) - m[i] : xj[i]; };
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    for (int64_t i = 0; i < n; ++i) {
      const T d = centred(xj, i);
      r[i] += d * d;
    }
  }
  for (int64_t i = 0; i < n; ++i) r[i] = inv_sqrt(r[i] * inv_g + eps);
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    T* yj = y + j * stride;
    const T wj = w[j], bj = b[j];
    for (int64_t i = 0; i < n; ++i) yj[i] = centred(xj, i) * (r[i] * wj) + bj;
  }
  for (int64_t i = 0; i < n; ++i) mean[i] = kCenter ? x[i] + m[i] : T(0), rstd[i] = r[i];
}

#if PLN_HAVE_AVX2
// The forward reads a group's chunk twice: once for its statistics, from
// memory, and once for its output, from L2. With a group's rows a plane apart,
// the hardware prefetchers follow these short row runs poorly, so the output
// pass prefetches the task's next chunk into L2 (the portable forward gains
// nothing from it; measurements: bench/results/cpu-kernel-notes.md).
struct NextChunk {
  int64_t offset = 0;  // from the current chunk, in elements
  int64_t n = 0;       // positions per row; 0: the task has no next chunk
};

inline NextChunk next_chunk(int64_t i0, int64_t I, int64_t G, bool more_slabs) {
  if (i0 + kChunk < I) return {kChunk, std::min(kChunk, I - i0 - kChunk)};
  if (more_slabs) return {G * I - i0, std::min(kChunk, I)};
  return {};
}

// Scalar twin: forward_chunk (which also takes the positions past the last
// multiple of 8). Eight float positions at a time, the statistics in two
// passes as there (one, mean(d^2) - m^2, lost up to nine times ATen's error).
// kStream: y rows are 32-byte aligned and the output is too large to stay in
// cache, so it is written with non-temporal stores (no read-for-ownership).
template <bool kCenter, bool kStream>
void forward_chunk_avx2(const float* x, float* y, int64_t stride, int64_t n, int64_t G,
                        const float* w, const float* b, float* mean, float* rstd, float eps,
                        NextChunk next) {
  const int64_t nv = n / 8 * 8;
  if (nv > 0) {
    // s1: m, the mean of the values shifted by the group's first row; s2: the
    // sum of the squares of the centred values (x_j - x_0) - m.
    alignas(32) float s1[kChunk], s2[kChunk];
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nv; i += 8) {
      _mm256_store_ps(s1 + i, zero);
      _mm256_store_ps(s2 + i, zero);
    }
    const __m256 inv_g = _mm256_set1_ps(1.f / float(G));
    if (kCenter) {
      for (int64_t j = 1; j < G; ++j) {
        const float* xj = x + j * stride;
        for (int64_t i = 0; i < nv; i += 8) {
          const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xj + i), _mm256_loadu_ps(x + i));
          _mm256_store_ps(s1 + i, _mm256_add_ps(_mm256_load_ps(s1 + i), d));
        }
      }
      for (int64_t i = 0; i < nv; i += 8) _mm256_store_ps(s1 + i, _mm256_mul_ps(_mm256_load_ps(s1 + i), inv_g));
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xj = x + j * stride;
      for (int64_t i = 0; i < nv; i += 8) {
        const __m256 xj_i = _mm256_loadu_ps(xj + i);
        const __m256 c =
            kCenter ? _mm256_sub_ps(_mm256_sub_ps(xj_i, _mm256_loadu_ps(x + i)), _mm256_load_ps(s1 + i)) : xj_i;
        _mm256_store_ps(s2 + i, _mm256_fmadd_ps(c, c, _mm256_load_ps(s2 + i)));
      }
    }
    const __m256 veps = _mm256_set1_ps(eps), one = _mm256_set1_ps(1.f);
    for (int64_t i = 0; i < nv; i += 8) {
      const __m256 var = _mm256_mul_ps(_mm256_load_ps(s2 + i), inv_g);
      const __m256 r = _mm256_div_ps(one, _mm256_sqrt_ps(_mm256_add_ps(var, veps)));
      _mm256_storeu_ps(mean + i, kCenter ? _mm256_add_ps(_mm256_load_ps(s1 + i), _mm256_loadu_ps(x + i)) : zero);
      _mm256_storeu_ps(rstd + i, r);
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xj = x + j * stride;
      float* yj = y + j * stride;
      const __m256 wj = _mm256_set1_ps(w[j]), bj = _mm256_set1_ps(b[j]);
      for (int64_t i = 0; i < nv; i += 8) {
        if (i % 16 == 0 && i < next.n) _mm_prefetch(xj + next.offset + i, _MM_HINT_T1);
        const __m256 xj_i = _mm256_loadu_ps(xj + i);
        const __m256 xc =
            kCenter ? _mm256_sub_ps(_mm256_sub_ps(xj_i, _mm256_loadu_ps(x + i)), _mm256_load_ps(s1 + i))
                    : xj_i;
        const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(rstd + i), wj);
        if (kStream) {
          _mm256_stream_ps(yj + i, _mm256_fmadd_ps(xc, scale, bj));
        } else {
          _mm256_storeu_ps(yj + i, _mm256_fmadd_ps(xc, scale, bj));
        }
      }
    }
  }
  if (nv < n) {
    forward_chunk<float, kCenter>(x + nv, y + nv, stride, n - nv, G, w, b, mean + nv, rstd + nv,
                                  eps);
  }
}
#endif  // PLN_HAVE_AVX2

// The per-row sums for dweight/dbias go into kSumLanes partial sums, one per
// position modulo kSumLanes: the compiler vectorises these without
// reassociating float arithmetic (which would undo the centring, see cpu/kernels.cpp).
constexpr int64_t kSumLanes = 16;

// The scalar backward of one chunk of n positions of one group (as forward_chunk).
template <typename T, bool kCenter>
void backward_chunk(const T* dy, const T* x, int64_t stride, int64_t n, int64_t G,
                    const T* mean, const T* rstd, const T* w, T* dx, double* dw, double* db) {
  // a: mean_j(gy), b: mean_j(d), c: mean_j(gy * y), per position.
  T a[kChunk], b[kChunk], c[kChunk];
  const T inv_g = T(1) / T(G);
  for (int64_t i = 0; i < n; ++i) a[i] = T(0), b[i] = T(0), c[i] = T(0);
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    const T* dyj = dy + j * stride;
    const T wj = w[j];
    for (int64_t i = 0; i < n; ++i) {
      const T d = xj[i] - mean[i];
      const T gy = dyj[i] * wj;
      a[i] += gy;
      if (kCenter) b[i] += d;
      c[i] += gy * d;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const T mean_gy = a[i] * inv_g, mean_d = kCenter ? b[i] * inv_g : T(0);
    c[i] = rstd[i] * (c[i] * inv_g - mean_d * mean_gy);
    a[i] = kCenter ? mean_gy : T(0);
    b[i] = mean_d;
  }
  for (int64_t j = 0; j < G; ++j) {
    const T* xj = x + j * stride;
    const T* dyj = dy + j * stride;
    T* dxj = dx ? dx + j * stride : nullptr;
    const T wj = w[j];
    T sum_dyy[kSumLanes] = {}, sum_dy[kSumLanes] = {};
    const auto position = [&](int64_t i, int64_t lane) {
      const T yv = ((xj[i] - mean[i]) - b[i]) * rstd[i];
      if (dxj) dxj[i] = rstd[i] * (dyj[i] * wj - a[i] - yv * c[i]);
      sum_dyy[lane] += dyj[i] * yv;
      sum_dy[lane] += dyj[i];
    };
    int64_t i = 0;
    for (; i + kSumLanes <= n; i += kSumLanes) {
      for (int64_t l = 0; l < kSumLanes; ++l) position(i + l, l);
    }
    for (; i < n; ++i) position(i, 0);
    if (dw) {
      for (int64_t l = 0; l < kSumLanes; ++l) dw[j] += sum_dyy[l], db[j] += sum_dy[l];
    }
  }
}

#if PLN_HAVE_AVX2
// Vectors of positions each float lane of the dweight/dbias sums adds before
// they go to double: longer float sums lose digits (at 64 a lane, a chunk's
// worth, dweight at g = 3 was up to three times ATen's error).
constexpr int64_t kWidenSteps = 8;

// Scalar twin: backward_chunk (which also takes the positions past the last
// multiple of 8). Eight float positions at a time. The first pass walks the
// group's rows four at a time, so the per-position sums are loaded and stored
// once per four rows; the second pass prefetches the task's next chunk into
// L2 (as forward_chunk_avx2) and, with kStream, writes dx around the cache.
// Per position, the second pass's constants: nbr = -b * rstd (so that
// y = d * rstd + nbr in one rounding), ra = -rstd * mean_j(gy) and
// rc = rstd * mean_j(gy * y):  dx = rstd * gy + ra - y * rc.
template <bool kCenter, bool kStream>
void backward_chunk_avx2(const float* dy, const float* x, int64_t stride, int64_t n, int64_t G,
                         const float* mean, const float* rstd, const float* w, float* dx,
                         double* dw, double* db, NextChunk next) {
  const int64_t nv = n / 8 * 8;
  if (nv > 0) {
    alignas(32) float ra[kChunk], nbr[kChunk], rc[kChunk];
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < G; j0 += 4) {
      const int64_t rows = std::min<int64_t>(4, G - j0);
      for (int64_t i = 0; i < nv; i += 8) {
        const __m256 m = _mm256_loadu_ps(mean + i);
        __m256 a = j0 ? _mm256_load_ps(ra + i) : zero;
        __m256 b = j0 ? _mm256_load_ps(nbr + i) : zero;
        __m256 c = j0 ? _mm256_load_ps(rc + i) : zero;
        for (int64_t j = j0; j < j0 + rows; ++j) {
          const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j * stride + i), m);
          const __m256 gy = _mm256_mul_ps(_mm256_loadu_ps(dy + j * stride + i), _mm256_set1_ps(w[j]));
          a = _mm256_add_ps(a, gy);
          if (kCenter) b = _mm256_add_ps(b, d);
          c = _mm256_fmadd_ps(gy, d, c);
        }
        _mm256_store_ps(ra + i, a);
        _mm256_store_ps(nbr + i, b);
        _mm256_store_ps(rc + i, c);
      }
    }
    const __m256 inv_g = _mm256_set1_ps(1.f / float(G));
    for (int64_t i = 0; i < nv; i += 8) {
      const __m256 r = _mm256_loadu_ps(rstd + i);
      const __m256 mean_gy = _mm256_mul_ps(_mm256_load_ps(ra + i), inv_g);
      const __m256 mean_d = kCenter ? _mm256_mul_ps(_mm256_load_ps(nbr + i), inv_g) : zero;
      const __m256 c = _mm256_fnmadd_ps(mean_d, mean_gy, _mm256_mul_ps(_mm256_load_ps(rc + i), inv_g));
      _mm256_store_ps(ra + i, kCenter ? _mm256_sub_ps(zero, _mm256_mul_ps(r, mean_gy)) : zero);
      _mm256_store_ps(nbr + i, _mm256_sub_ps(zero, _mm256_mul_ps(mean_d, r)));
      _mm256_store_ps(rc + i, _mm256_mul_ps(_mm256_mul_ps(r, c), r));
    }
    for (int64_t j = 0; j < G; ++j) {
      const float* xj = x + j * stride;
      const float* dyj = dy + j * stride;
      float* dxj = dx ? dx + j * stride : nullptr;
      const __m256 wj = _mm256_set1_ps(w[j]);
      __m256 sum_dyy = zero, sum_dy = zero;
      alignas(32) double wide_dyy[8] = {}, wide_dy[8] = {};
      for (int64_t i = 0; i < nv; i += 8) {
        if (i % 16 == 0 && i < next.n) {
          _mm_prefetch(xj + next.offset + i, _MM_HINT_T1);
          _mm_prefetch(dyj + next.offset + i, _MM_HINT_T1);
        }
        const __m256 r = _mm256_loadu_ps(rstd + i);
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xj + i), _mm256_loadu_ps(mean + i));
        const __m256 yv = _mm256_fmadd_ps(d, r, _mm256_load_ps(nbr + i));
        const __m256 dyv = _mm256_loadu_ps(dyj + i);
        if (dxj) {
          const __m256 t = _mm256_fmadd_ps(r, _mm256_mul_ps(dyv, wj), _mm256_load_ps(ra + i));
          const __m256 v = _mm256_fnmadd_ps(yv, _mm256_load_ps(rc + i), t);
          if (kStream) {
            _mm256_stream_ps(dxj + i, v);
          } else {
            _mm256_storeu_ps(dxj + i, v);
          }
        }
        sum_dyy = _mm256_fmadd_ps(dyv, yv, sum_dyy);
        sum_dy = _mm256_add_ps(sum_dy, dyv);
        if ((i / 8) % kWidenSteps == kWidenSteps - 1 || i + 8 >= nv) {
          Avx2Vec<float>::accumulate(wide_dyy, sum_dyy), Avx2Vec<float>::accumulate(wide_dy, sum_dy);
          sum_dyy = zero, sum_dy = zero;
        }
      }
      if (dw) {
        for (int l = 0; l < 8; ++l) dw[j] += wide_dyy[l], db[j] += wide_dy[l];
      }
    }
  }
  if (nv < n) {
    backward_chunk<float, kCenter>(dy + nv, x + nv, stride, n - nv, G, mean + nv, rstd + nv, w,
                                   dx ? dx + nv : nullptr, dw, db);
  }
}
#endif  // PLN_HAVE_AVX2

}  // namespace
}  // namespace pln::cpu::PLN_CPU_NS
