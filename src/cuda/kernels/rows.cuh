#pragma once
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
// Part of the fused CUDA kernels of src/cuda/kernels.cu, which alone includes
// it (once, in the build's inline namespace).

#include "cuda/kernels/arithmetic.cuh"

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace {

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
  // Only compared with 32 / VEC by the launch (more chunks take the large-group
  // kernels); the cap keeps the int exact for groups of any size.
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

}  // namespace
}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
