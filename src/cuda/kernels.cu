// Fused CUDA kernels of Parallel LN; the math is in kernels.h.
//
// Features-last rows (inner = 1): a group is g contiguous values. The tensor
// is a stream of groups; each group is held by `lanes` consecutive threads of
// a warp (a power of two dividing the group's 16-byte chunks, at most 32),
// each with `chunks` 16-byte vectors of it in registers, so a warp reads one
// contiguous run of memory. The group's sums are reduced with log2(lanes)
// __shfl_xor_sync steps (none when one thread holds the whole group). Groups
// too large for registers take one block each.
//
// NCHW (inner = H*W): a group's values lie a plane apart. One thread per
// (sample, group, pixel), consecutive threads on consecutive pixels, so every
// load is coalesced; the g values of its group stay in the thread's registers
// (g <= 32) and the reductions are sequential within the thread.
//
// dweight/dbias: per-block partial sums over a chunk of rows (columns of
// threads on consecutive channels), then one fixed-order sum over the chunks:
// deterministic, and never an atomic on float16 or bfloat16.

#include "cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace pln::cuda {

namespace {

// ------------------------------------------------------------ arithmetic ---

__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename S>
__device__ __forceinline__ S from_acc(float v);
template <>
__device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ float from_acc<float>(float v) { return v; }

template <typename S, typename A>
__device__ __forceinline__ S store_value(A v) {
  if constexpr (sizeof(A) == 8) {
    return static_cast<S>(v);
  } else {
    return from_acc<S>(v);
  }
}

__device__ __forceinline__ float rsqrt_acc(float v) { return rsqrtf(v); }
__device__ __forceinline__ double rsqrt_acc(double v) { return rsqrt(v); }

// Sum over the `lanes` threads of a sub-warp (lanes: a power of two, <= 32).
template <typename A>
__device__ __forceinline__ A group_sum(A v, int lanes, unsigned mask) {
  for (int offset = lanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, lanes);
  return v;
}

// The mask of this thread's sub-warp of `lanes` threads.
__device__ __forceinline__ unsigned subwarp_mask(int lanes) {
  if (lanes == 32) return 0xffffffffu;
  const unsigned first = (threadIdx.x % 32) / lanes * lanes;
  return ((1u << lanes) - 1u) << first;
}

// Sum over a block (blockDim.x a multiple of 32, at most 1024), in a fixed order.
template <typename A>
__device__ A block_sum(A v, A* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = group_sum(v, 32, 0xffffffffu);
  __syncthreads();  // `shared` may hold the previous call's partials
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  A total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];
  return total;
}

// VEC values of S that move as one 16-byte (or smaller) load.
template <typename S, int VEC>
struct alignas(sizeof(S) * VEC) Pack {
  S v[VEC];
};

// ------------------------------------------------- features-last rows ---

struct RowShape {
  int64_t groups;          // groups in the whole tensor
  int64_t group;           // g
  int64_t groups_per_row;  // C / g: a group's channel offset is (q % groups_per_row) * g
  int lanes;               // threads per group
  int chunks;              // VEC-vectors per thread
};

// y, and the statistics when asked, of every group.
template <typename S, typename A, int VEC, int MAX_ITEMS>
__global__ void rows_forward(RowShape s, const S* __restrict__ x, const S* __restrict__ w,
                             const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                             A* __restrict__ rstd, A eps, bool centering) {
  const int lane = threadIdx.x % s.lanes;
  const unsigned mask = subwarp_mask(s.lanes);
  const int items = s.chunks * VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x / s.lanes;
  for (int64_t q = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / s.lanes; q < s.groups; q += stride) {
    const int64_t base = q * s.group + int64_t(lane) * items;
    const int64_t channel = (q % s.groups_per_row) * s.group + int64_t(lane) * items;
    A v[MAX_ITEMS];
#pragma unroll
    for (int c = 0; c < MAX_ITEMS / VEC; ++c) {
      if (c < s.chunks) {
        const auto pack = *reinterpret_cast<const Pack<S, VEC>*>(x + base + c * VEC);
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[c * VEC + k] = to_acc(pack.v[k]);
      }
    }
    A sum = 0;
#pragma unroll
    for (int i = 0; i < MAX_ITEMS; ++i) sum += i < items ? v[i] : A(0);
    const A mu = centering ? group_sum(sum, s.lanes, mask) / A(s.group) : A(0);
    A squares = 0;
#pragma unroll
    for (int i = 0; i < MAX_ITEMS; ++i) {
      if (i < items) {
        v[i] -= mu;
        squares += v[i] * v[i];
      }
    }
    const A r = rsqrt_acc(group_sum(squares, s.lanes, mask) / A(s.group) + eps);
#pragma unroll
    for (int c = 0; c < MAX_ITEMS / VEC; ++c) {
      if (c < s.chunks) {
        Pack<S, VEC> out;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int64_t ch = channel + c * VEC + k;
          out.v[k] = store_value<S>(v[c * VEC + k] * r * to_acc(w[ch]) + to_acc(b[ch]));
        }
        *reinterpret_cast<Pack<S, VEC>*>(y + base + c * VEC) = out;
      }
    }
    if (mean != nullptr && lane == 0) {
      mean[q] = mu;
      rstd[q] = r;
    }
  }
}

// dx of every group from its saved statistics.
template <typename S, typename A, int VEC, int MAX_ITEMS>
__global__ void rows_backward(RowShape s, const S* __restrict__ dy, const S* __restrict__ x,
                              const A* __restrict__ mean, const A* __restrict__ rstd, const S* __restrict__ w,
                              S* __restrict__ dx, bool centering) {
  const int lane = threadIdx.x % s.lanes;
  const unsigned mask = subwarp_mask(s.lanes);
  const int items = s.chunks * VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x / s.lanes;
  for (int64_t q = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / s.lanes; q < s.groups; q += stride) {
    const int64_t base = q * s.group + int64_t(lane) * items;
    const int64_t channel = (q % s.groups_per_row) * s.group + int64_t(lane) * items;
    const A mu = mean[q], r = rstd[q];
    A xhat[MAX_ITEMS], gy[MAX_ITEMS];
    A sum_gy = 0, sum_gy_xhat = 0;
#pragma unroll
    for (int c = 0; c < MAX_ITEMS / VEC; ++c) {
      if (c < s.chunks) {
        const auto xs = *reinterpret_cast<const Pack<S, VEC>*>(x + base + c * VEC);
        const auto ds = *reinterpret_cast<const Pack<S, VEC>*>(dy + base + c * VEC);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int i = c * VEC + k;
          xhat[i] = (to_acc(xs.v[k]) - mu) * r;
          gy[i] = to_acc(ds.v[k]) * to_acc(w[channel + i]);
          sum_gy += gy[i];
          sum_gy_xhat += gy[i] * xhat[i];
        }
      }
    }
    const A inv_g = A(1) / A(s.group);
    const A mean_gy = centering ? group_sum(sum_gy, s.lanes, mask) * inv_g : A(0);
    const A mean_gy_xhat = group_sum(sum_gy_xhat, s.lanes, mask) * inv_g;
#pragma unroll
    for (int c = 0; c < MAX_ITEMS / VEC; ++c) {
      if (c < s.chunks) {
        Pack<S, VEC> out;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int i = c * VEC + k;
          out.v[k] = store_value<S>(r * (gy[i] - mean_gy - xhat[i] * mean_gy_xhat));
        }
        *reinterpret_cast<Pack<S, VEC>*>(dx + base + c * VEC) = out;
      }
    }
  }
}

// One block per group, for groups too large for registers: three passes over
// the group (sum, centred squares, outputs), which stays in L2 between them.
template <typename S, typename A>
__global__ void large_group_forward(RowShape s, const S* __restrict__ x, const S* __restrict__ w,
                                    const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                                    A* __restrict__ rstd, A eps, bool centering) {
  __shared__ A shared[32];
  for (int64_t q = blockIdx.x; q < s.groups; q += gridDim.x) {
    const S* xq = x + q * s.group;
    const int64_t channel = (q % s.groups_per_row) * s.group;
    A sum = 0;
    for (int64_t j = threadIdx.x; j < s.group; j += blockDim.x) sum += to_acc(xq[j]);
    const A mu = centering ? block_sum(sum, shared) / A(s.group) : A(0);
    A squares = 0;
    for (int64_t j = threadIdx.x; j < s.group; j += blockDim.x) {
      const A d = to_acc(xq[j]) - mu;
      squares += d * d;
    }
    const A r = rsqrt_acc(block_sum(squares, shared) / A(s.group) + eps);
    for (int64_t j = threadIdx.x; j < s.group; j += blockDim.x) {
      y[q * s.group + j] = store_value<S>((to_acc(xq[j]) - mu) * r * to_acc(w[channel + j]) + to_acc(b[channel + j]));
    }
    if (mean != nullptr && threadIdx.x == 0) {
      mean[q] = mu;
      rstd[q] = r;
    }
  }
}

template <typename S, typename A>
__global__ void large_group_backward(RowShape s, const S* __restrict__ dy, const S* __restrict__ x,
                                     const A* __restrict__ mean, const A* __restrict__ rstd,
                                     const S* __restrict__ w, S* __restrict__ dx, bool centering) {
  __shared__ A shared[32];
  for (int64_t q = blockIdx.x; q < s.groups; q += gridDim.x) {
    const int64_t base = q * s.group, channel = (q % s.groups_per_row) * s.group;
    const A mu = mean[q], r = rstd[q];
    A sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t j = threadIdx.x; j < s.group; j += blockDim.x) {
      const A gy = to_acc(dy[base + j]) * to_acc(w[channel + j]);
      sum_gy += gy;
      sum_gy_xhat += gy * (to_acc(x[base + j]) - mu) * r;
    }
    const A inv_g = A(1) / A(s.group);
    const A mean_gy = centering ? block_sum(sum_gy, shared) * inv_g : A(0);
    const A mean_gy_xhat = block_sum(sum_gy_xhat, shared) * inv_g;
    for (int64_t j = threadIdx.x; j < s.group; j += blockDim.x) {
      const A gy = to_acc(dy[base + j]) * to_acc(w[channel + j]);
      const A xhat = (to_acc(x[base + j]) - mu) * r;
      dx[base + j] = store_value<S>(r * (gy - mean_gy - xhat * mean_gy_xhat));
    }
  }
}

// ---------------------------------------------------------------- NCHW ---

constexpr int kMaxStridedGroup = 32;

// One thread per (sample, group, pixel): t = (o * G + q) * inner + i, which is
// also the index of the group's statistics.
template <typename S, typename A>
__global__ void strided_forward(Geometry g, const S* __restrict__ x, const S* __restrict__ w,
                                const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                                A* __restrict__ rstd, A eps, bool centering) {
  const int64_t groups = g.channels / g.group, total = g.outer * groups * g.inner;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t % g.inner, q = (t / g.inner) % groups, o = t / (g.inner * groups);
    const int64_t first = (o * g.channels + q * g.group) * g.inner + i;
    A v[kMaxStridedGroup];
    A sum = 0;
#pragma unroll
    for (int j = 0; j < kMaxStridedGroup; ++j) {
      if (j < g.group) {
        v[j] = to_acc(x[first + j * g.inner]);
        sum += v[j];
      }
    }
    const A mu = centering ? sum / A(g.group) : A(0);
    A squares = 0;
#pragma unroll
    for (int j = 0; j < kMaxStridedGroup; ++j) {
      if (j < g.group) {
        v[j] -= mu;
        squares += v[j] * v[j];
      }
    }
    const A r = rsqrt_acc(squares / A(g.group) + eps);
#pragma unroll
    for (int j = 0; j < kMaxStridedGroup; ++j) {
      if (j < g.group) {
        const int64_t ch = q * g.group + j;
        y[first + j * g.inner] = store_value<S>(v[j] * r * to_acc(w[ch]) + to_acc(b[ch]));
      }
    }
    if (mean != nullptr) {
      mean[t] = mu;
      rstd[t] = r;
    }
  }
}

// The same for groups of more than kMaxStridedGroup channels: three passes
// over the group's values in memory.
template <typename S, typename A>
__global__ void strided_forward_large(Geometry g, const S* __restrict__ x, const S* __restrict__ w,
                                      const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                                      A* __restrict__ rstd, A eps, bool centering) {
  const int64_t groups = g.channels / g.group, total = g.outer * groups * g.inner;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t % g.inner, q = (t / g.inner) % groups, o = t / (g.inner * groups);
    const int64_t first = (o * g.channels + q * g.group) * g.inner + i;
    A sum = 0;
    for (int64_t j = 0; j < g.group; ++j) sum += to_acc(x[first + j * g.inner]);
    const A mu = centering ? sum / A(g.group) : A(0);
    A squares = 0;
    for (int64_t j = 0; j < g.group; ++j) {
      const A d = to_acc(x[first + j * g.inner]) - mu;
      squares += d * d;
    }
    const A r = rsqrt_acc(squares / A(g.group) + eps);
    for (int64_t j = 0; j < g.group; ++j) {
      const int64_t ch = q * g.group + j;
      y[first + j * g.inner] = store_value<S>((to_acc(x[first + j * g.inner]) - mu) * r * to_acc(w[ch]) + to_acc(b[ch]));
    }
    if (mean != nullptr) {
      mean[t] = mu;
      rstd[t] = r;
    }
  }
}

template <typename S, typename A>
__global__ void strided_backward(Geometry g, const S* __restrict__ dy, const S* __restrict__ x,
                                 const A* __restrict__ mean, const A* __restrict__ rstd, const S* __restrict__ w,
                                 S* __restrict__ dx, bool centering) {
  const int64_t groups = g.channels / g.group, total = g.outer * groups * g.inner;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t % g.inner, q = (t / g.inner) % groups, o = t / (g.inner * groups);
    const int64_t first = (o * g.channels + q * g.group) * g.inner + i;
    const A mu = mean[t], r = rstd[t];
    A sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t j = 0; j < g.group; ++j) {
      const A gy = to_acc(dy[first + j * g.inner]) * to_acc(w[q * g.group + j]);
      sum_gy += gy;
      sum_gy_xhat += gy * (to_acc(x[first + j * g.inner]) - mu) * r;
    }
    const A inv_g = A(1) / A(g.group);
    const A mean_gy = centering ? sum_gy * inv_g : A(0);
    const A mean_gy_xhat = sum_gy_xhat * inv_g;
    for (int64_t j = 0; j < g.group; ++j) {
      const int64_t k = first + j * g.inner;
      const A gy = to_acc(dy[k]) * to_acc(w[q * g.group + j]);
      dx[k] = store_value<S>(r * (gy - mean_gy - (to_acc(x[k]) - mu) * r * mean_gy_xhat));
    }
  }
}

// ------------------------------------------------------- dweight, dbias ---

// Rows of the reduction: features-last, row o of [outer, C]; NCHW, the pair
// (o, i). Block (32, 8) over (32 channels, a chunk of rows): partials[chunk][c].
template <typename S, typename A>
__global__ void param_partials(Geometry g, int64_t rows_per_chunk, const S* __restrict__ dy,
                               const S* __restrict__ x, const A* __restrict__ mean, const A* __restrict__ rstd,
                               A* __restrict__ dw_partial, A* __restrict__ db_partial) {
  __shared__ A dw_shared[8][33], db_shared[8][33];
  const int64_t c = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t rows = g.outer * g.inner, groups = g.channels / g.group;
  const int64_t first = int64_t(blockIdx.y) * rows_per_chunk, last = min(rows, first + rows_per_chunk);
  A dw = 0, db = 0;
  if (c < g.channels) {
    for (int64_t row = first + threadIdx.y; row < last; row += 8) {
      const int64_t o = row / g.inner, i = row % g.inner;
      const int64_t k = (o * g.channels + c) * g.inner + i;
      const int64_t stat = (o * groups + c / g.group) * g.inner + i;
      const A d = to_acc(dy[k]);
      dw += d * (to_acc(x[k]) - mean[stat]) * rstd[stat];
      db += d;
    }
  }
  dw_shared[threadIdx.y][threadIdx.x] = dw;
  db_shared[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < g.channels) {
    A sum_dw = 0, sum_db = 0;
    for (int k = 0; k < 8; ++k) sum_dw += dw_shared[k][threadIdx.x], sum_db += db_shared[k][threadIdx.x];
    dw_partial[int64_t(blockIdx.y) * g.channels + c] = sum_dw;
    db_partial[int64_t(blockIdx.y) * g.channels + c] = sum_db;
  }
}

template <typename A>
__global__ void param_finish(int64_t channels, int64_t chunks, const A* __restrict__ dw_partial,
                             const A* __restrict__ db_partial, A* __restrict__ dweight, A* __restrict__ dbias) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  A dw = 0, db = 0;
  for (int64_t k = 0; k < chunks; ++k) dw += dw_partial[k * channels + c], db += db_partial[k * channels + c];
  dweight[c] = dw;
  dbias[c] = db;
}

// ------------------------------------------------------------- launching ---

constexpr int kThreads = 256;

int64_t blocks_for(int64_t threads_needed) {
  return std::max<int64_t>(1, std::min<int64_t>((threads_needed + kThreads - 1) / kThreads, int64_t(1) << 20));
}

// Rows of the partial sums per chunk: enough chunks to fill the GPU, few enough
// that the finishing sum is short.
int64_t chunks_for(const Geometry& g) { return std::min<int64_t>(512, (g.outer * g.inner + 63) / 64); }

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The lanes and chunks of a group of `vectors` VEC-vectors: lanes the largest
// power of two <= 32 dividing it.
RowShape row_shape(const Geometry& g, int vec) {
  const int64_t vectors = g.group / vec;
  int lanes = 1;
  while (lanes < 32 && vectors % (2 * lanes) == 0) lanes *= 2;
  return {g.outer * (g.channels / g.group), g.group, g.channels / g.group, lanes,
          static_cast<int>(vectors / lanes)};
}

template <typename S>
constexpr int full_vec() {
  return 16 / sizeof(S) > 0 ? static_cast<int>(16 / sizeof(S)) : 1;
}

template <typename S, typename A, int VEC>
bool launch_rows_forward(const Geometry& g, const S* x, const S* w, const S* b, S* y, A* mean, A* rstd, A eps,
                         bool centering, cudaStream_t stream) {
  const RowShape s = row_shape(g, VEC);
  const int items = s.chunks * VEC;
  const int64_t blocks = blocks_for(s.groups * s.lanes);
  if (items <= 8) {
    rows_forward<S, A, VEC, (8 > VEC ? 8 : VEC)><<<blocks, kThreads, 0, stream>>>(s, x, w, b, y, mean, rstd, eps, centering);
  } else if (items <= 32) {
    rows_forward<S, A, VEC, (32 > VEC ? 32 : VEC)><<<blocks, kThreads, 0, stream>>>(s, x, w, b, y, mean, rstd, eps, centering);
  } else {
    return false;
  }
  return true;
}

template <typename S, typename A, int VEC>
bool launch_rows_backward(const Geometry& g, const S* dy, const S* x, const A* mean, const A* rstd, const S* w,
                          S* dx, bool centering, cudaStream_t stream) {
  const RowShape s = row_shape(g, VEC);
  const int items = s.chunks * VEC;
  const int64_t blocks = blocks_for(s.groups * s.lanes);
  if (items <= 8) {
    rows_backward<S, A, VEC, (8 > VEC ? 8 : VEC)><<<blocks, kThreads, 0, stream>>>(s, dy, x, mean, rstd, w, dx, centering);
  } else if (items <= 32) {
    rows_backward<S, A, VEC, (32 > VEC ? 32 : VEC)><<<blocks, kThreads, 0, stream>>>(s, dy, x, mean, rstd, w, dx, centering);
  } else {
    return false;
  }
  return true;
}

template <typename S, typename A>
void forward_impl(const Geometry& g, const S* x, const S* w, const S* b, S* y, A* mean, A* rstd, double eps,
                  bool centering, cudaStream_t stream) {
  if (g.numel() == 0) return;
  const A e = static_cast<A>(eps);
  if (g.inner > 1) {
    const int64_t blocks = blocks_for(g.outer * (g.channels / g.group) * g.inner);
    if (g.group <= kMaxStridedGroup) {
      strided_forward<S, A><<<blocks, kThreads, 0, stream>>>(g, x, w, b, y, mean, rstd, e, centering);
    } else {
      strided_forward_large<S, A><<<blocks, kThreads, 0, stream>>>(g, x, w, b, y, mean, rstd, e, centering);
    }
    return;
  }
  constexpr int VEC = full_vec<S>();
  const bool vectors = g.group % VEC == 0 && aligned(x, 16) && aligned(y, 16);
  if (vectors && launch_rows_forward<S, A, VEC>(g, x, w, b, y, mean, rstd, e, centering, stream)) return;
  if (launch_rows_forward<S, A, 1>(g, x, w, b, y, mean, rstd, e, centering, stream)) return;
  const RowShape s = row_shape(g, 1);
  large_group_forward<S, A><<<blocks_for(s.groups * kThreads), kThreads, 0, stream>>>(s, x, w, b, y, mean, rstd, e,
                                                                                      centering);
}

template <typename S, typename A>
void backward_impl(const Geometry& g, const S* dy, const S* x, const A* mean, const A* rstd, const S* w,
                   bool centering, S* dx, A* dweight, A* dbias, A* workspace, cudaStream_t stream) {
  if (g.numel() > 0) {
    if (g.inner > 1) {
      strided_backward<S, A><<<blocks_for(g.outer * (g.channels / g.group) * g.inner), kThreads, 0, stream>>>(
          g, dy, x, mean, rstd, w, dx, centering);
    } else {
      constexpr int VEC = full_vec<S>();
      const bool vectors = g.group % VEC == 0 && aligned(x, 16) && aligned(dy, 16) && aligned(dx, 16);
      if (!(vectors && launch_rows_backward<S, A, VEC>(g, dy, x, mean, rstd, w, dx, centering, stream)) &&
          !launch_rows_backward<S, A, 1>(g, dy, x, mean, rstd, w, dx, centering, stream)) {
        const RowShape s = row_shape(g, 1);
        large_group_backward<S, A><<<blocks_for(s.groups * kThreads), kThreads, 0, stream>>>(s, dy, x, mean, rstd, w,
                                                                                             dx, centering);
      }
    }
  }
  const int64_t chunks = std::max<int64_t>(1, chunks_for(g));
  const int64_t rows = g.outer * g.inner, rows_per_chunk = std::max<int64_t>(1, (rows + chunks - 1) / chunks);
  A* dw_partial = workspace;
  A* db_partial = workspace + chunks * g.channels;
  const dim3 grid(static_cast<unsigned>((g.channels + 31) / 32), static_cast<unsigned>(chunks));
  param_partials<S, A><<<grid, dim3(32, 8), 0, stream>>>(g, rows_per_chunk, dy, x, mean, rstd, dw_partial, db_partial);
  param_finish<A><<<static_cast<unsigned>((g.channels + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      g.channels, chunks, dw_partial, db_partial, dweight, dbias);
}

// The storage type kernels see for each element type of the header.
template <typename T>
struct Storage {
  using type = T;
};
template <>
struct Storage<half_t> {
  using type = __half;
};
template <>
struct Storage<bfloat16_t> {
  using type = __nv_bfloat16;
};

}  // namespace

template <typename T>
void forward(const Geometry& g, const T* x, const T* weight, const T* bias, T* y, typename Acc<T>::type* mean,
             typename Acc<T>::type* rstd, double eps, bool centering, void* stream) {
  using S = typename Storage<T>::type;
  forward_impl<S, typename Acc<T>::type>(g, reinterpret_cast<const S*>(x), reinterpret_cast<const S*>(weight),
                                         reinterpret_cast<const S*>(bias), reinterpret_cast<S*>(y), mean, rstd, eps,
                                         centering, static_cast<cudaStream_t>(stream));
}

template <typename T>
void backward(const Geometry& g, const T* dy, const T* x, const typename Acc<T>::type* mean,
              const typename Acc<T>::type* rstd, const T* weight, bool centering, T* dx,
              typename Acc<T>::type* dweight, typename Acc<T>::type* dbias, typename Acc<T>::type* workspace,
              void* stream) {
  using S = typename Storage<T>::type;
  backward_impl<S, typename Acc<T>::type>(g, reinterpret_cast<const S*>(dy), reinterpret_cast<const S*>(x), mean,
                                          rstd, reinterpret_cast<const S*>(weight), centering,
                                          reinterpret_cast<S*>(dx), dweight, dbias, workspace,
                                          static_cast<cudaStream_t>(stream));
}

int64_t workspace_elements(const Geometry& g) { return 2 * std::max<int64_t>(1, chunks_for(g)) * g.channels; }

const char* last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

#define PLN_INSTANTIATE(T)                                                                                     \
  template void forward<T>(const Geometry&, const T*, const T*, const T*, T*, Acc<T>::type*, Acc<T>::type*,   \
                           double, bool, void*);                                                               \
  template void backward<T>(const Geometry&, const T*, const T*, const Acc<T>::type*, const Acc<T>::type*,    \
                            const T*, bool, T*, Acc<T>::type*, Acc<T>::type*, Acc<T>::type*, void*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
PLN_INSTANTIATE(half_t)
PLN_INSTANTIATE(bfloat16_t)
#undef PLN_INSTANTIATE

}  // namespace pln::cuda
