#pragma once
// NCHW (inner = H*W): a group's values lie a plane apart. A block holds one
// group of channels and 256 consecutive (sample, pixel) positions, one per
// thread, looping down the positions, so every load is coalesced; the group
// size is a template parameter for g = 2, 4, 8, 16, 32 (its values, weight
// and bias, and partial sums in registers), run-time up to 32, and re-read
// from cache above. The partials are summed over each warp by shuffles and
// written as the warp's row of the workspace.
// Part of the fused CUDA kernels of src/cuda/kernels.cu, which alone includes
// it (once, in the build's inline namespace).

#include "cuda/kernels/arithmetic.cuh"

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace {

struct StridedPlan {
  int64_t channels, inner, group, groups;
  int64_t positions;   // outer * inner: (sample, pixel) pairs
  int64_t row_blocks;  // blocks down the positions, per group of channels
};

StridedPlan strided_plan(const Geometry& g) {
  StridedPlan p{g.channels, g.inner, g.group, g.channels / g.group, g.outer * g.inner, 0};
  p.row_blocks = clamp64(ceil_div(kTargetBlocks, p.groups), 1, ceil_div(p.positions, kThreads));
  return p;
}

// G > 0: groups of G channels, in registers; G = 0: g <= 32 at run time, in
// registers; G < 0: larger groups, re-read from cache.
template <int G>
constexpr int kStridedMax = G > 0 ? G : (G == 0 ? 32 : 1);

template <typename S, typename A, int G>
__global__ void strided_forward(StridedPlan p, const S* __restrict__ x, const S* __restrict__ w,
                                const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                                A* __restrict__ rstd, A eps, bool centering) {
  constexpr int MAX = kStridedMax<G>;
  constexpr bool kRegisters = G >= 0;
  const int64_t g = G > 0 ? G : p.group;
  const int64_t q = blockIdx.x % p.groups, row_block = blockIdx.x / p.groups;
  A wr[G > 0 ? G : 1] = {}, br[G > 0 ? G : 1] = {};
  if constexpr (G > 0) {
#pragma unroll
    for (int j = 0; j < G; ++j) wr[j] = to_acc(w[q * G + j]), br[j] = to_acc(b[q * G + j]);
  }
  auto wb = [&](int64_t j, A& wj, A& bj) {
    if constexpr (G > 0) {
      wj = wr[j], bj = br[j];
    } else {
      wj = to_acc(w[q * g + j]), bj = to_acc(b[q * g + j]);
    }
  };
  for (int64_t pos = row_block * kThreads + threadIdx.x; pos < p.positions; pos += p.row_blocks * kThreads) {
    const int64_t o = pos / p.inner, i = pos % p.inner;
    const int64_t first = (o * p.channels + q * g) * p.inner + i, stat = (o * p.groups + q) * p.inner + i;
    const A shift = centering ? to_acc(x[first]) : A(0);
    A m, r;
    if constexpr (kRegisters) {
      A v[MAX];
      A sum = 0;
#pragma unroll
      for (int j = 0; j < MAX; ++j) {
        if (j < g) {
          v[j] = to_acc(x[first + j * p.inner]) - shift;
          sum += v[j];
        }
      }
      m = centering ? sum / A(g) : A(0);
      A squares = 0;
#pragma unroll
      for (int j = 0; j < MAX; ++j) {
        if (j < g) {
          v[j] -= m;
          squares += v[j] * v[j];
        }
      }
      r = rsqrt_acc(squares / A(g) + eps);
#pragma unroll
      for (int j = 0; j < MAX; ++j) {
        if (j < g) {
          A wj, bj;
          wb(j, wj, bj);
          y[first + j * p.inner] = store_value<S>(v[j] * r * wj + bj);
        }
      }
    } else {
      A sum = 0;
      for (int64_t j = 0; j < g; ++j) sum += to_acc(x[first + j * p.inner]) - shift;
      m = centering ? sum / A(g) : A(0);
      A squares = 0;
      for (int64_t j = 0; j < g; ++j) {
        const A d = (to_acc(x[first + j * p.inner]) - shift) - m;
        squares += d * d;
      }
      r = rsqrt_acc(squares / A(g) + eps);
      for (int64_t j = 0; j < g; ++j) {
        A wj, bj;
        wb(j, wj, bj);
        y[first + j * p.inner] = store_value<S>(((to_acc(x[first + j * p.inner]) - shift) - m) * r * wj + bj);
      }
    }
    if (mean != nullptr) {
      mean[stat] = shift + m;
      rstd[stat] = r;
    }
  }
}

template <typename S, typename A, int G>
__global__ void strided_backward(StridedPlan p, const S* __restrict__ dy, const S* __restrict__ x,
                                 const A* __restrict__ mean, const A* __restrict__ rstd, const S* __restrict__ w,
                                 S* __restrict__ dx, bool centering, A* __restrict__ dw_ws, A* __restrict__ db_ws) {
  constexpr int MAX = kStridedMax<G>;
  constexpr bool kRegisters = G >= 0;
  const int64_t g = G > 0 ? G : p.group;
  const int64_t q = blockIdx.x % p.groups, row_block = blockIdx.x / p.groups;
  const bool params = dw_ws != nullptr;
  const int lane = threadIdx.x % 32;
  // This warp's workspace row.
  const int64_t ws_row = (row_block * kWarps + threadIdx.x / 32) * p.channels + q * g;
  A wr[G > 0 ? G : 1] = {};
  if constexpr (G > 0) {
#pragma unroll
    for (int j = 0; j < G; ++j) wr[j] = to_acc(w[q * G + j]);
  }
  auto weight = [&](int64_t j) -> A {
    if constexpr (G > 0) {
      return wr[j];
    } else {
      return to_acc(w[q * g + j]);
    }
  };
  A dw_acc[MAX] = {}, db_acc[MAX] = {};
  const A inv_g = A(1) / A(g);
  for (int64_t p0 = row_block * kThreads; p0 < p.positions; p0 += p.row_blocks * kThreads) {
    const int64_t pos = p0 + threadIdx.x;
    const bool active = pos < p.positions;
    const int64_t o = pos / p.inner, i = pos % p.inner;
    const int64_t first = (o * p.channels + q * g) * p.inner + i, stat = (o * p.groups + q) * p.inner + i;
    const A mu = active ? mean[stat] : A(0), r = active ? rstd[stat] : A(0);
    A sum_d = 0, sum_gy = 0, sum_gy_d = 0;
    if constexpr (kRegisters) {
      A d[MAX], dys[MAX];
#pragma unroll
      for (int j = 0; j < MAX; ++j) {
        if (j < g) {
          d[j] = active ? to_acc(x[first + j * p.inner]) - mu : A(0);
          dys[j] = active ? to_acc(dy[first + j * p.inner]) : A(0);
          const A gy = dys[j] * weight(j);
          sum_d += d[j];
          sum_gy += gy;
          sum_gy_d += gy * d[j];
        }
      }
      const A bias_d = centering ? sum_d * inv_g : A(0);
      const A mean_gy = centering ? sum_gy * inv_g : A(0);
      const A mean_gy_xhat = r * (sum_gy_d - bias_d * sum_gy) * inv_g;
#pragma unroll
      for (int j = 0; j < MAX; ++j) {
        if (j < g) {
          const A xhat = (d[j] - bias_d) * r;
          if (active) dx[first + j * p.inner] = store_value<S>(r * (dys[j] * weight(j) - mean_gy - xhat * mean_gy_xhat));
          dw_acc[j] += dys[j] * xhat;
          db_acc[j] += dys[j];
        }
      }
    } else {
      for (int64_t j = 0; j < g && active; ++j) {
        const A d = to_acc(x[first + j * p.inner]) - mu, gy = to_acc(dy[first + j * p.inner]) * weight(j);
        sum_d += d;
        sum_gy += gy;
        sum_gy_d += gy * d;
      }
      const A bias_d = centering ? sum_d * inv_g : A(0);
      const A mean_gy = centering ? sum_gy * inv_g : A(0);
      const A mean_gy_xhat = r * (sum_gy_d - bias_d * sum_gy) * inv_g;
      const bool first_pass = p0 == row_block * kThreads;
      for (int64_t j = 0; j < g; ++j) {  // the same count in every thread: the shuffles below
        A dyj = 0, xhat = 0;
        if (active) {
          dyj = to_acc(dy[first + j * p.inner]);
          xhat = (to_acc(x[first + j * p.inner]) - mu - bias_d) * r;
          dx[first + j * p.inner] = store_value<S>(r * (dyj * weight(j) - mean_gy - xhat * mean_gy_xhat));
        }
        if (params) {
          const A sum_dw = group_sum(dyj * xhat, 32, 0xffffffffu), sum_db = group_sum(dyj, 32, 0xffffffffu);
          if (lane == 0) {
            dw_ws[ws_row + j] = (first_pass ? A(0) : dw_ws[ws_row + j]) + sum_dw;
            db_ws[ws_row + j] = (first_pass ? A(0) : db_ws[ws_row + j]) + sum_db;
          }
        }
      }
    }
  }
  if constexpr (kRegisters) {
    if (!params) return;  // uniform
#pragma unroll
    for (int j = 0; j < MAX; ++j) {
      if (j < g) {
        const A sum_dw = group_sum(dw_acc[j], 32, 0xffffffffu), sum_db = group_sum(db_acc[j], 32, 0xffffffffu);
        if (lane == 0) {
          dw_ws[ws_row + j] = sum_dw;
          db_ws[ws_row + j] = sum_db;
        }
      }
    }
  }
}

}  // namespace
}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
