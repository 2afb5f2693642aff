// Fused CUDA kernels of Parallel LN; the math is in kernels.h.
//
// Features-last rows (inner = 1): a group is g contiguous values, held by
// `lanes` consecutive threads (a power of two, at most 32), each with
// `chunks` vectors of VEC values in registers. VEC = gcd(g, 16 bytes / element
// size) where the pointers allow it, and a thread's chunks are interleaved
// across its lanes (chunk c of lane l is vector c * lanes + l of the group),
// so that every load of a sub-warp is one contiguous run. The group's sums
// are reduced with log2(lanes) __shfl_xor_sync steps. A block covers `cols`
// consecutive groups of a row (a column tile) and `rows_per_pass` rows at a
// time, looping down the rows: a thread's channels never change, so it keeps
// its weight and bias in registers (groups of at most 8 values per thread)
// and, in the backward, its dweight/dbias partial sums, combined across the
// block's rows once at the end (fixed order) and written as the block's
// row of the workspace. Groups of more than 32 values per thread take a
// block each (three reads of the group in the forward, two in the backward,
// all but the first from cache), the partials in the block's workspace row.
//
// NCHW (inner = H*W): a group's values lie a plane apart. A block holds one
// group of channels and 256 consecutive (sample, pixel) positions, one per
// thread, looping down the positions, so every load is coalesced; the group
// size is a template parameter for g = 2, 4, 8, 16, 32 (its values, weight
// and bias, and partial sums in registers), run-time up to 32, and re-read
// from cache above. The partials are summed over each warp by shuffles and
// written as the warp's row of the workspace.
//
// A last small kernel sums the workspace rows of dweight and dbias in a
// fixed order: deterministic, no atomics.
//
// Every loop that holds a shuffle or a __syncthreads runs the same number of
// times in all threads of a block (threads past the end compute on zeros):
// CUDA needs it for __syncthreads, and HIP-CPU, where a shuffle is a barrier
// of the whole block, for both.

#include "cuda/kernels.h"

#include "cuda/runtime.h"

#include <algorithm>
#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {

namespace {

// ------------------------------------------------------------ arithmetic ---

__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename S>
__device__ __forceinline__ S from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }

template <typename S, typename A>
__device__ __forceinline__ S store_value(A v) {
  if constexpr (sizeof(A) == 8) {
    return static_cast<S>(v);
  } else {
    return from_float<S>(v);
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
  if (lanes >= 32) return 0xffffffffu;
  const unsigned first = (threadIdx.x % 32) / lanes * lanes;
  return ((1u << lanes) - 1u) << first;
}

// Sums of N values over the block (blockDim.x a multiple of 32), in a fixed
// order; `shared` holds N * 32 values.
template <typename A, int N>
__device__ void block_sums(A (&v)[N], A* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
  for (int n = 0; n < N; ++n) v[n] = group_sum(v[n], 32, 0xffffffffu);
  __syncthreads();  // `shared` may hold the previous call's sums
  if (lane == 0) {
#pragma unroll
    for (int n = 0; n < N; ++n) shared[n * 32 + warp] = v[n];
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < N; ++n) {
    A total = 0;
    for (int w = 0; w < warps; ++w) total += shared[n * 32 + w];
    v[n] = total;
  }
}

// VEC values of S that move as one load of up to 16 bytes.
template <typename S, int VEC>
struct alignas(sizeof(S) * VEC) Pack {
  S v[VEC];
};

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Blocks a launch aims at (enough to fill an H200's 132 SMs); also the most
// workspace rows of the features-last kernels.
constexpr int64_t kTargetBlocks = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

// ------------------------------------------------- features-last rows ---

struct RowPlan {
  int64_t rows;            // outer
  int64_t group;           // g
  int64_t groups_per_row;  // C / g
  int lanes;               // threads per group
  int chunks;              // VEC-vectors per thread
  int cols;                // groups of a row per block (a column tile)
  int rows_per_pass;       // rows a block holds at once
  int64_t col_tiles;       // column tiles across a row
  int64_t row_blocks;      // blocks down the rows: the workspace rows
};

RowPlan row_plan(const Geometry& g, int vec) {
  RowPlan p{};
  p.rows = g.outer;
  p.group = g.group;
  p.groups_per_row = g.channels / g.group;
  const int64_t vectors = g.group / vec;
  int lanes = 1;
  while (lanes < 32 && vectors % (2 * lanes) == 0) lanes *= 2;
  p.lanes = lanes;
  p.chunks = static_cast<int>(std::min<int64_t>(vectors / lanes, 1 << 20));
  const int slots = kThreads / lanes;
  p.cols = static_cast<int>(std::min<int64_t>(p.groups_per_row, slots));
  p.rows_per_pass = slots / p.cols;
  p.col_tiles = ceil_div(p.groups_per_row, p.cols);
  p.row_blocks = clamp64(ceil_div(kTargetBlocks, p.col_tiles), 1, ceil_div(p.rows, p.rows_per_pass));
  return p;
}

// Where a thread of a RowPlan block sits: its lane in the group, its slot
// (sub-warp) in the block, which row of the pass and which group of the row.
struct RowSeat {
  int lane, slot, sub;
  int64_t col, row_block;
  bool has_col;  // a group of the tile and a row of the pass (else it idles, on zeros)
};

__device__ __forceinline__ RowSeat row_seat(const RowPlan& p) {
  RowSeat s;
  s.lane = threadIdx.x % p.lanes;
  s.slot = threadIdx.x / p.lanes;
  s.sub = s.slot / p.cols;
  s.col = int64_t(blockIdx.x % p.col_tiles) * p.cols + s.slot % p.cols;
  s.row_block = blockIdx.x / p.col_tiles;
  s.has_col = s.sub < p.rows_per_pass && s.col < p.groups_per_row;
  return s;
}

// The offset in its group of item i = c * VEC + k of a thread: chunks interleaved across lanes.
template <int VEC>
__device__ __forceinline__ int64_t item_offset(int c, int k, int lane, int lanes) {
  return (int64_t(c) * lanes + lane) * VEC + k;
}

// y, and the statistics when asked, of every group.
template <typename S, typename A, int VEC, int MAX_ITEMS>
__global__ void rows_forward(RowPlan p, const S* __restrict__ x, const S* __restrict__ w,
                             const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                             A* __restrict__ rstd, A eps, bool centering) {
  constexpr int kChunks = MAX_ITEMS / VEC;
  constexpr bool kHold = MAX_ITEMS <= 8;  // weight and bias in registers
  const RowSeat seat = row_seat(p);
  const unsigned mask = subwarp_mask(p.lanes);
  const int64_t channel0 = seat.col * p.group;
  A wr[kHold ? MAX_ITEMS : 1] = {}, br[kHold ? MAX_ITEMS : 1] = {};
  if constexpr (kHold) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (seat.has_col && c < p.chunks) {
          const int64_t ch = channel0 + item_offset<VEC>(c, k, seat.lane, p.lanes);
          wr[c * VEC + k] = to_acc(w[ch]);
          br[c * VEC + k] = to_acc(b[ch]);
        }
      }
    }
  }
  const int64_t step = p.row_blocks * p.rows_per_pass;
  for (int64_t r0 = seat.row_block * p.rows_per_pass; r0 < p.rows; r0 += step) {
    const int64_t row = r0 + seat.sub;
    const bool active = seat.has_col && row < p.rows;
    const int64_t q = row * p.groups_per_row + seat.col;
    const S* xq = x + q * p.group;
    // The shift: the group's first value, so that the sums below see x - s,
    // free of a common offset's cancellation (0 without centering).
    const A shift = centering && active ? to_acc(xq[0]) : A(0);
    A v[MAX_ITEMS];
    A sum = 0;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      Pack<S, VEC> pack{};
      const bool live = active && c < p.chunks;
      if (live) pack = *reinterpret_cast<const Pack<S, VEC>*>(xq + item_offset<VEC>(c, 0, seat.lane, p.lanes));
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        v[c * VEC + k] = live ? to_acc(pack.v[k]) - shift : A(0);
        sum += v[c * VEC + k];
      }
    }
    const A m = centering ? group_sum(sum, p.lanes, mask) / A(p.group) : A(0);
    A squares = 0;
#pragma unroll
    for (int i = 0; i < MAX_ITEMS; ++i) {
      if (i < p.chunks * VEC) {
        v[i] -= m;
        squares += v[i] * v[i];
      }
    }
    const A r = rsqrt_acc(group_sum(squares, p.lanes, mask) / A(p.group) + eps);
    if (!active) continue;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (c < p.chunks) {
        Pack<S, VEC> out;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int i = c * VEC + k;
          A wi, bi;
          if constexpr (kHold) {
            wi = wr[i], bi = br[i];
          } else {
            const int64_t ch = channel0 + item_offset<VEC>(c, k, seat.lane, p.lanes);
            wi = to_acc(w[ch]), bi = to_acc(b[ch]);
          }
          out.v[k] = store_value<S>(v[i] * r * wi + bi);
        }
        *reinterpret_cast<Pack<S, VEC>*>(y + q * p.group + item_offset<VEC>(c, 0, seat.lane, p.lanes)) = out;
      }
    }
    if (mean != nullptr && seat.lane == 0) {
      mean[q] = shift + m;
      rstd[q] = r;
    }
  }
}

// dx of every group from its saved statistics, in one read of x and dy; with
// `dw_ws` (the dweight partials; the dbias partials follow at db_ws), the
// block's partial sums, written as its workspace row.
template <typename S, typename A, int VEC, int MAX_ITEMS>
__global__ void rows_backward(RowPlan p, const S* __restrict__ dy, const S* __restrict__ x,
                              const A* __restrict__ mean, const A* __restrict__ rstd, const S* __restrict__ w,
                              S* __restrict__ dx, bool centering, A* __restrict__ dw_ws, A* __restrict__ db_ws,
                              int64_t channels) {
  constexpr int kChunks = MAX_ITEMS / VEC;
  constexpr bool kHold = MAX_ITEMS <= 8;
  __shared__ A dw_shared[kThreads], db_shared[kThreads];
  const RowSeat seat = row_seat(p);
  const unsigned mask = subwarp_mask(p.lanes);
  const int items = p.chunks * VEC;
  const bool params = dw_ws != nullptr;
  const int64_t channel0 = seat.col * p.group;
  A wr[kHold ? MAX_ITEMS : 1] = {};
  if constexpr (kHold) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (seat.has_col && c < p.chunks) wr[c * VEC + k] = to_acc(w[channel0 + item_offset<VEC>(c, k, seat.lane, p.lanes)]);
      }
    }
  }
  auto weight = [&](int c, int k) -> A {
    if constexpr (kHold) {
      return wr[c * VEC + k];
    } else {
      return to_acc(w[channel0 + item_offset<VEC>(c, k, seat.lane, p.lanes)]);
    }
  };
  A dw_acc[MAX_ITEMS] = {}, db_acc[MAX_ITEMS] = {};
  const A inv_g = A(1) / A(p.group);
  const int64_t step = p.row_blocks * p.rows_per_pass;
  for (int64_t r0 = seat.row_block * p.rows_per_pass; r0 < p.rows; r0 += step) {
    const int64_t row = r0 + seat.sub;
    const bool active = seat.has_col && row < p.rows;
    const int64_t q = row * p.groups_per_row + seat.col;
    const A mu = active ? mean[q] : A(0), r = active ? rstd[q] : A(0);
    A d[MAX_ITEMS], dys[MAX_ITEMS];
    A sum_d = 0, sum_gy = 0, sum_gy_d = 0;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      Pack<S, VEC> xs{}, ds{};
      const bool live = active && c < p.chunks;
      if (live) {
        const int64_t at = q * p.group + item_offset<VEC>(c, 0, seat.lane, p.lanes);
        xs = *reinterpret_cast<const Pack<S, VEC>*>(x + at);
        ds = *reinterpret_cast<const Pack<S, VEC>*>(dy + at);
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const int i = c * VEC + k;
        d[i] = live ? to_acc(xs.v[k]) - mu : A(0);
        dys[i] = live ? to_acc(ds.v[k]) : A(0);
        const A gy = live ? dys[i] * weight(c, k) : A(0);
        sum_d += d[i];
        sum_gy += gy;
        sum_gy_d += gy * d[i];
      }
    }
    // b: the mean of x - mean, zero but for the saved mean's rounding (the re-centring).
    const A bias_d = centering ? group_sum(sum_d, p.lanes, mask) * inv_g : A(0);
    const A total_gy = group_sum(sum_gy, p.lanes, mask);
    const A total_gy_d = group_sum(sum_gy_d, p.lanes, mask);
    const A mean_gy = centering ? total_gy * inv_g : A(0);
    const A mean_gy_xhat = r * (total_gy_d - bias_d * total_gy) * inv_g;
    if (!active) continue;  // no shuffle below: its partials stay as they are
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (c < p.chunks) {
        Pack<S, VEC> out;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int i = c * VEC + k;
          const A xhat = (d[i] - bias_d) * r;
          out.v[k] = store_value<S>(r * (dys[i] * weight(c, k) - mean_gy - xhat * mean_gy_xhat));
          if (params) {
            dw_acc[i] += dys[i] * xhat;
            db_acc[i] += dys[i];
          }
        }
        *reinterpret_cast<Pack<S, VEC>*>(dx + q * p.group + item_offset<VEC>(c, 0, seat.lane, p.lanes)) = out;
      }
    }
  }
  if (!params) return;  // uniform: every thread of the launch returns here
  // The block's partials: the rows of a pass summed in order, one workspace row per block.
  const int64_t ws_row = seat.row_block * channels;
  auto channel = [&](int i) { return channel0 + item_offset<VEC>(i / VEC, i % VEC, seat.lane, p.lanes); };
  if (p.rows_per_pass == 1) {
    if (seat.has_col) {
#pragma unroll
      for (int i = 0; i < MAX_ITEMS; ++i) {  // constant indices: the partials stay in registers
        if (i < items) {
          dw_ws[ws_row + channel(i)] = dw_acc[i];
          db_ws[ws_row + channel(i)] = db_acc[i];
        }
      }
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < MAX_ITEMS; ++i) {
    if (i < items) {
      dw_shared[threadIdx.x] = dw_acc[i];
      db_shared[threadIdx.x] = db_acc[i];
      __syncthreads();
      if (seat.has_col && seat.sub == 0) {
        A sum_dw = 0, sum_db = 0;
        for (int k = 0; k < p.rows_per_pass; ++k) {
          const int t = (k * p.cols + seat.slot % p.cols) * p.lanes + seat.lane;
          sum_dw += dw_shared[t];
          sum_db += db_shared[t];
        }
        dw_ws[ws_row + channel(i)] = sum_dw;
        db_ws[ws_row + channel(i)] = sum_db;
      }
      __syncthreads();
    }
  }
}

// One block per group, for groups too large for registers; a block keeps one
// column of groups (its channels never change) down its rows.
struct LargePlan {
  int64_t rows, group, groups_per_row, row_blocks;
};

LargePlan large_plan(const Geometry& g) {
  const int64_t per_row = g.channels / g.group;
  return {g.outer, g.group, per_row, clamp64(ceil_div(kTargetBlocks, per_row), 1, g.outer)};
}

// Three reads of the group (sums of x - s, of the centred squares, outputs),
// the last two from cache.
template <typename S, typename A>
__global__ void large_group_forward(LargePlan p, const S* __restrict__ x, const S* __restrict__ w,
                                    const S* __restrict__ b, S* __restrict__ y, A* __restrict__ mean,
                                    A* __restrict__ rstd, A eps, bool centering) {
  __shared__ A shared[32];
  const int64_t col = blockIdx.x % p.groups_per_row, row_block = blockIdx.x / p.groups_per_row;
  const int64_t channel0 = col * p.group;
  for (int64_t row = row_block; row < p.rows; row += p.row_blocks) {
    const int64_t q = row * p.groups_per_row + col;
    const S* xq = x + q * p.group;
    const A shift = centering ? to_acc(xq[0]) : A(0);
    A sums[1] = {0};
    for (int64_t j = threadIdx.x; j < p.group; j += blockDim.x) sums[0] += to_acc(xq[j]) - shift;
    block_sums(sums, shared);
    const A m = centering ? sums[0] / A(p.group) : A(0);
    sums[0] = 0;
    for (int64_t j = threadIdx.x; j < p.group; j += blockDim.x) {
      const A d = (to_acc(xq[j]) - shift) - m;
      sums[0] += d * d;
    }
    block_sums(sums, shared);
    const A r = rsqrt_acc(sums[0] / A(p.group) + eps);
    for (int64_t j = threadIdx.x; j < p.group; j += blockDim.x) {
      const A d = (to_acc(xq[j]) - shift) - m;
      y[q * p.group + j] = store_value<S>(d * r * to_acc(w[channel0 + j]) + to_acc(b[channel0 + j]));
    }
    if (mean != nullptr && threadIdx.x == 0) {
      mean[q] = shift + m;
      rstd[q] = r;
    }
  }
}

// Two reads of the group (the sums, then dx), the second from cache; each
// thread adds its channels' partials into the block's workspace row.
template <typename S, typename A>
__global__ void large_group_backward(LargePlan p, const S* __restrict__ dy, const S* __restrict__ x,
                                     const A* __restrict__ mean, const A* __restrict__ rstd,
                                     const S* __restrict__ w, S* __restrict__ dx, bool centering,
                                     A* __restrict__ dw_ws, A* __restrict__ db_ws, int64_t channels) {
  __shared__ A shared[3 * 32];
  const int64_t col = blockIdx.x % p.groups_per_row, row_block = blockIdx.x / p.groups_per_row;
  const int64_t channel0 = col * p.group, ws_row = row_block * channels + channel0;
  const A inv_g = A(1) / A(p.group);
  for (int64_t row = row_block; row < p.rows; row += p.row_blocks) {
    const int64_t q = row * p.groups_per_row + col, base = q * p.group;
    const A mu = mean[q], r = rstd[q];
    A sums[3] = {0, 0, 0};  // x - mean, gy, gy * (x - mean)
    for (int64_t j = threadIdx.x; j < p.group; j += blockDim.x) {
      const A d = to_acc(x[base + j]) - mu, gy = to_acc(dy[base + j]) * to_acc(w[channel0 + j]);
      sums[0] += d;
      sums[1] += gy;
      sums[2] += gy * d;
    }
    block_sums(sums, shared);
    const A bias_d = centering ? sums[0] * inv_g : A(0);
    const A mean_gy = centering ? sums[1] * inv_g : A(0);
    const A mean_gy_xhat = r * (sums[2] - bias_d * sums[1]) * inv_g;
    for (int64_t j = threadIdx.x; j < p.group; j += blockDim.x) {
      const A dyj = to_acc(dy[base + j]);
      const A xhat = (to_acc(x[base + j]) - mu - bias_d) * r;
      dx[base + j] = store_value<S>(r * (dyj * to_acc(w[channel0 + j]) - mean_gy - xhat * mean_gy_xhat));
      if (dw_ws != nullptr) {
        const bool first = row == row_block;
        dw_ws[ws_row + j] = (first ? A(0) : dw_ws[ws_row + j]) + dyj * xhat;
        db_ws[ws_row + j] = (first ? A(0) : db_ws[ws_row + j]) + dyj;
      }
    }
  }
}

// ---------------------------------------------------------------- NCHW ---

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

// ------------------------------------------------------- dweight, dbias ---

// dweight[c] and dbias[c]: the sums of `parts` workspace rows, in order.
template <typename A>
__global__ void param_finish(int64_t channels, int64_t parts, const A* __restrict__ dw_ws,
                             const A* __restrict__ db_ws, A* __restrict__ dweight, A* __restrict__ dbias) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  A dw = 0, db = 0;
  for (int64_t k = 0; k < parts; ++k) dw += dw_ws[k * channels + c], db += db_ws[k * channels + c];
  dweight[c] = dw;
  dbias[c] = db;
}

// ------------------------------------------------------------- launching ---

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// VEC = gcd(g, 16 bytes / element size), halved until every pointer is aligned to it.
template <typename S>
int vector_width(int64_t group, std::initializer_list<const void*> pointers) {
  int vec = static_cast<int>(16 / sizeof(S));
  while (vec > 1 && group % vec != 0) vec /= 2;
  for (const void* ptr : pointers) {
    while (vec > 1 && !aligned(ptr, vec * static_cast<int>(sizeof(S)))) vec /= 2;
  }
  return vec;
}

// Calls fn(std::integral_constant<int, VEC>) for the run-time vec (a power of two, at most 16 bytes).
template <typename S, typename Fn>
void with_vec(int vec, Fn&& fn) {
  constexpr int kFull = static_cast<int>(16 / sizeof(S));
  if constexpr (kFull >= 8) {
    if (vec == 8) return fn(std::integral_constant<int, 8>{});
  }
  if constexpr (kFull >= 4) {
    if (vec == 4) return fn(std::integral_constant<int, 4>{});
  }
  if (vec == 2) return fn(std::integral_constant<int, 2>{});
  fn(std::integral_constant<int, 1>{});
}

// Calls fn(std::integral_constant<int, G>) with G the compiled group size, 0 (g <= 32) or -1.
template <typename Fn>
void with_group(int64_t g, Fn&& fn) {
  switch (g) {
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    case 16: return fn(std::integral_constant<int, 16>{});
    case 32: return fn(std::integral_constant<int, 32>{});
    default: break;
  }
  if (g <= 32) return fn(std::integral_constant<int, 0>{});
  fn(std::integral_constant<int, -1>{});
}

// The workspace rows of a backward over this geometry, at most: one per
// block down the rows (features-last), one per warp (NCHW).
int64_t max_parts(const Geometry& g) {
  if (g.inner > 1) return strided_plan(g).row_blocks * kWarps;
  return std::max<int64_t>(1, std::min(g.outer, kTargetBlocks));
}

template <typename S, typename A>
void forward_impl(const Geometry& g, const S* x, const S* w, const S* b, S* y, A* mean, A* rstd, double eps,
                  bool centering, cudaStream_t stream) {
  if (g.numel() == 0) return;
  const A e = static_cast<A>(eps);
  if (g.inner > 1) {
    const StridedPlan p = strided_plan(g);
    with_group(g.group, [&](auto G) {
      launch(strided_forward<S, A, decltype(G)::value>, dim3(static_cast<unsigned>(p.row_blocks * p.groups)),
             dim3(kThreads), 0, stream, p, x, w, b, y, mean, rstd, e, centering);
    });
    return;
  }
  const int vec = vector_width<S>(g.group, {x, y});
  bool done = false;
  with_vec<S>(vec, [&](auto V) {
    constexpr int VEC = decltype(V)::value;
    const RowPlan p = row_plan(g, VEC);
    const dim3 blocks(static_cast<unsigned>(p.row_blocks * p.col_tiles));
    const int items = p.chunks * VEC;
    if (items <= 8) {
      launch(rows_forward<S, A, VEC, (8 > VEC ? 8 : VEC)>, blocks, dim3(kThreads), 0, stream, p, x, w, b, y, mean,
             rstd, e, centering);
      done = true;
    } else if (items <= 32) {
      launch(rows_forward<S, A, VEC, 32>, blocks, dim3(kThreads), 0, stream, p, x, w, b, y, mean, rstd, e,
             centering);
      done = true;
    }
  });
  if (done) return;
  const LargePlan p = large_plan(g);
  launch(large_group_forward<S, A>, dim3(static_cast<unsigned>(p.row_blocks * p.groups_per_row)), dim3(kThreads), 0,
         stream, p, x, w, b, y, mean, rstd, e, centering);
}

template <typename S, typename A>
void backward_impl(const Geometry& g, const S* dy, const S* x, const A* mean, const A* rstd, const S* w,
                   bool centering, S* dx, A* dweight, A* dbias, A* workspace, cudaStream_t stream) {
  const bool params = dweight != nullptr && dbias != nullptr;
  int64_t parts = 0;  // workspace rows written
  A* dw_ws = params ? workspace : nullptr;
  auto db_ws = [&] { return params ? workspace + parts * g.channels : nullptr; };
  if (g.numel() > 0) {
    if (g.inner > 1) {
      const StridedPlan p = strided_plan(g);
      parts = p.row_blocks * kWarps;
      with_group(g.group, [&](auto G) {
        launch(strided_backward<S, A, decltype(G)::value>, dim3(static_cast<unsigned>(p.row_blocks * p.groups)),
               dim3(kThreads), 0, stream, p, dy, x, mean, rstd, w, dx, centering, dw_ws, db_ws());
      });
    } else {
      const int vec = vector_width<S>(g.group, {x, dy, dx});
      bool done = false;
      with_vec<S>(vec, [&](auto V) {
        constexpr int VEC = decltype(V)::value;
        const RowPlan p = row_plan(g, VEC);
        const dim3 blocks(static_cast<unsigned>(p.row_blocks * p.col_tiles));
        const int items = p.chunks * VEC;
        if (items > 32) return;
        parts = p.row_blocks;
        if (items <= 8) {
          launch(rows_backward<S, A, VEC, (8 > VEC ? 8 : VEC)>, blocks, dim3(kThreads), 0, stream, p, dy, x, mean,
                 rstd, w, dx, centering, dw_ws, db_ws(), g.channels);
        } else {
          launch(rows_backward<S, A, VEC, 32>, blocks, dim3(kThreads), 0, stream, p, dy, x, mean, rstd, w, dx,
                 centering, dw_ws, db_ws(), g.channels);
        }
        done = true;
      });
      if (!done) {
        const LargePlan p = large_plan(g);
        parts = p.row_blocks;
        launch(large_group_backward<S, A>, dim3(static_cast<unsigned>(p.row_blocks * p.groups_per_row)),
               dim3(kThreads), 0, stream, p, dy, x, mean, rstd, w, dx, centering, dw_ws, db_ws(), g.channels);
      }
    }
  }
  if (!params || g.channels == 0) return;
  launch(param_finish<A>, dim3(static_cast<unsigned>(ceil_div(g.channels, kThreads))), dim3(kThreads), 0, stream,
         g.channels, parts, workspace, db_ws(), dweight, dbias);
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

int64_t workspace_elements(const Geometry& g) { return 2 * max_parts(g) * std::max<int64_t>(1, g.channels); }

const char* last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

const char* synchronize(void* stream) {
  const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? last_error() : cudaGetErrorString(e);
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

}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
