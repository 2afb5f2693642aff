// Fused CUDA kernels of the gated norm; the math is in gated.h. Every loop
// that holds a shuffle runs the same number of times in all threads of a
// block (warps past the last group compute on zeros), as kernels.cu's do.

#include "cuda/gated.h"

#include "cuda/runtime.h"
#include "cuda/kernels/arithmetic.cuh"

#include <algorithm>
#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace gated {
namespace {

constexpr int kLanes = 32;                    // threads a group
constexpr int kGroupsPerBlock = kThreads / kLanes;

__device__ __forceinline__ float exp_acc(float v) { return expf(v); }
__device__ __forceinline__ double exp_acc(double v) { return exp(v); }

// The kernels' scalar arguments.
template <typename A>
struct Params {
  int64_t rows, channels, group, groups_per_row;
  int64_t instances;  // rows * groups_per_row: the groups normalised
  A eps;
  bool centering, before, sigmoid;
};

template <typename A>
__device__ __forceinline__ A activation(const Params<A>& p, A z) {
  const A sg = A(1) / (A(1) + exp_acc(-z));
  return p.sigmoid ? sg : z * sg;
}

template <typename A>
__device__ __forceinline__ A activation_slope(const Params<A>& p, A z) {
  const A sg = A(1) / (A(1) + exp_acc(-z));
  return p.sigmoid ? sg * (A(1) - sg) : sg * (A(1) + z * (A(1) - sg));
}

// One value of a group: act(z) into `a`, and the normalised input h.
template <typename S, typename A>
__device__ __forceinline__ A gated_value(const Params<A>& p, const S* x, const S* z, int64_t j, A& a) {
  a = activation(p, to_acc(z[j]));
  return p.before ? to_acc(x[j]) * a : to_acc(x[j]);
}

// The statistics of the group at x + off (lanes stride through it; inactive
// warps sum zeros): the shifted mean, then the sum of squares of the centred values.
template <typename S, typename A>
__device__ void group_stats(const Params<A>& p, const S* x, const S* z, int64_t off, int lane, bool active, A& mu,
                            A& rstd) {
  A a;
  const A shift = active && p.centering ? gated_value(p, x, z, off, a) : A(0);
  A sum = 0;
  if (active && p.centering) {
    for (int64_t i = lane; i < p.group; i += kLanes) sum += gated_value(p, x, z, off + i, a) - shift;
  }
  sum = group_sum(sum, kLanes, subwarp_mask(kLanes));
  mu = p.centering ? shift + sum / A(p.group) : A(0);
  A squares = 0;
  if (active) {
    for (int64_t i = lane; i < p.group; i += kLanes) {
      const A c = gated_value(p, x, z, off + i, a) - mu;
      squares += c * c;
    }
  }
  squares = group_sum(squares, kLanes, subwarp_mask(kLanes));
  rstd = rsqrt_acc(squares / A(p.group) + p.eps);
}

// Where a warp slot stands in its group: the group q (of every row's groups)
// at x + off, its first feature c0 within the row, this thread's lane, and
// whether q is a group at all (the last block's spare slots are not, and sum
// zeros with the others).
struct GroupAt {
  int64_t q, off, c0;
  int lane;
  bool active;
};

// Each warp slot of each block takes groups in a grid stride, and `body(at,
// mu, rstd)` gets each one's statistics. Every lane of a slot calls body,
// active or not, since its group sums need them all.
template <typename S, typename A, typename Body>
__device__ __forceinline__ void for_each_group(const Params<A>& p, const S* x, const S* z, Body body) {
  const int lane = threadIdx.x % kLanes, slot = threadIdx.x / kLanes;
  for (int64_t q0 = int64_t(blockIdx.x) * kGroupsPerBlock; q0 < p.instances;
       q0 += int64_t(gridDim.x) * kGroupsPerBlock) {
    const int64_t q = q0 + slot;
    const GroupAt at{q, q * p.group, (q % p.groups_per_row) * p.group, lane, q < p.instances};
    A mu, r;
    group_stats(p, x, z, at.off, lane, at.active, mu, r);
    body(at, mu, r);
  }
}

template <typename S, typename A>
__global__ void gated_forward(Params<A> p, const S* __restrict__ x, const S* __restrict__ z,
                              const S* __restrict__ w, const S* __restrict__ b, S* __restrict__ y,
                              S* __restrict__ mean, S* __restrict__ rstd) {
  for_each_group(p, x, z, [=](const GroupAt& at, A mu, A r) {
    if (!at.active) return;
    for (int64_t i = at.lane; i < p.group; i += kLanes) {
      A a;
      const A h = gated_value(p, x, z, at.off + i, a);
      const A out = (h - mu) * r * to_acc(w[at.c0 + i]) + to_acc(b[at.c0 + i]);
      y[at.off + i] = store_value<S>(p.before ? out : out * a);
    }
    if (mean != nullptr && at.lane == 0) mean[at.q] = store_value<S>(mu), rstd[at.q] = store_value<S>(r);
  });
}

// dx and dz of every group, and (stats not null) each group's mu and rstd
// for gated_param_parts.
template <typename S, typename A>
__global__ void gated_backward(Params<A> p, const S* __restrict__ dy, const S* __restrict__ x,
                               const S* __restrict__ z, const S* __restrict__ w, const S* __restrict__ b,
                               S* __restrict__ dx, S* __restrict__ dz, A* __restrict__ stats) {
  for_each_group(p, x, z, [=](const GroupAt& at, A mu, A r) {
    A sums[2] = {0, 0};  // sum dn, sum dn * n
    if (at.active) {
      for (int64_t i = at.lane; i < p.group; i += kLanes) {
        A a;
        const A n = (gated_value(p, x, z, at.off + i, a) - mu) * r;
        const A dt = p.before ? to_acc(dy[at.off + i]) : to_acc(dy[at.off + i]) * a;
        const A dn = dt * to_acc(w[at.c0 + i]);
        sums[0] += dn;
        sums[1] += dn * n;
      }
    }
    sums[0] = group_sum(sums[0], kLanes, subwarp_mask(kLanes));
    sums[1] = group_sum(sums[1], kLanes, subwarp_mask(kLanes));
    if (!at.active) return;
    const A mean_dn = p.centering ? sums[0] / A(p.group) : A(0), mean_dn_n = sums[1] / A(p.group);
    for (int64_t i = at.lane; i < p.group; i += kLanes) {
      const int64_t j = at.off + i;
      A a;
      const A n = (gated_value(p, x, z, j, a) - mu) * r;
      const A dyj = to_acc(dy[j]), wj = to_acc(w[at.c0 + i]), slope = activation_slope(p, to_acc(z[j]));
      const A dn = (p.before ? dyj : dyj * a) * wj;
      const A dh = r * (dn - n * mean_dn_n - mean_dn);
      if (p.before) {
        dx[j] = store_value<S>(dh * a);
        dz[j] = store_value<S>(dh * to_acc(x[j]) * slope);
      } else {
        dx[j] = store_value<S>(dh);
        dz[j] = store_value<S>(dyj * (n * wj + to_acc(b[at.c0 + i])) * slope);
      }
    }
    if (stats != nullptr && at.lane == 0) stats[2 * at.q] = mu, stats[2 * at.q + 1] = r;
  });
}

// How the dweight/dbias sums split the rows: `parts` runs of `rows_per_part`
// rows, each summed by `col_blocks` blocks across the features.
struct ParamPlan {
  int64_t col_blocks, parts, rows_per_part;
};

ParamPlan param_plan(int64_t rows, int64_t channels) {
  ParamPlan plan{};
  plan.col_blocks = ceil_div(std::max<int64_t>(channels, 1), kThreads);
  const int64_t wanted = clamp64(ceil_div(kTargetBlocks, plan.col_blocks), 1, std::max<int64_t>(rows, 1));
  plan.rows_per_part = ceil_div(std::max<int64_t>(rows, 1), wanted);
  plan.parts = ceil_div(std::max<int64_t>(rows, 1), plan.rows_per_part);
  return plan;
}

// Workspace rows part * C + c: the sums of dt * n and dt of feature c over the part's rows.
template <typename S, typename A>
__global__ void gated_param_parts(Params<A> p, ParamPlan plan, const S* __restrict__ dy, const S* __restrict__ x,
                                  const S* __restrict__ z, const A* __restrict__ stats, A* __restrict__ dw_ws,
                                  A* __restrict__ db_ws) {
  const int64_t part = blockIdx.x / plan.col_blocks;
  const int64_t c = int64_t(blockIdx.x % plan.col_blocks) * kThreads + threadIdx.x;
  if (c >= p.channels) return;
  const int64_t k = c / p.group, first = part * plan.rows_per_part;
  const int64_t last = first + plan.rows_per_part < p.rows ? first + plan.rows_per_part : p.rows;
  A dw = 0, db = 0;
  for (int64_t row = first; row < last; ++row) {
    const int64_t j = row * p.channels + c, q = row * p.groups_per_row + k;
    A a;
    const A n = (gated_value(p, x, z, j, a) - stats[2 * q]) * stats[2 * q + 1];
    const A dt = p.before ? to_acc(dy[j]) : to_acc(dy[j]) * a;
    dw += dt * n;
    db += dt;
  }
  dw_ws[part * p.channels + c] = dw;
  db_ws[part * p.channels + c] = db;
}

template <typename A>
Params<A> params_of(const Shape& s) {
  return {s.rows, s.channels, s.group, s.num_groups(), s.rows * s.num_groups(), static_cast<A>(s.eps),
          s.centering, s.gate_before, s.sigmoid};
}

dim3 group_blocks(int64_t instances) {
  return dim3(static_cast<unsigned>(clamp64(ceil_div(instances, kGroupsPerBlock), 1, 8 * kTargetBlocks)));
}

}  // namespace

template <typename T>
void forward(const Shape& s, const T* x, const T* z, const T* weight, const T* bias, T* y, T* mean, T* rstd,
             void* stream) {
  using S = typename Storage<T>::type;
  using A = typename Acc<T>::type;
  const Params<A> p = params_of<A>(s);
  if (p.instances == 0) return;
  launch(gated_forward<S, A>, group_blocks(p.instances), dim3(kThreads), 0, static_cast<cudaStream_t>(stream), p,
         reinterpret_cast<const S*>(x), reinterpret_cast<const S*>(z), reinterpret_cast<const S*>(weight),
         reinterpret_cast<const S*>(bias), reinterpret_cast<S*>(y), reinterpret_cast<S*>(mean),
         reinterpret_cast<S*>(rstd));
}

template <typename T>
void backward(const Shape& s, const T* dy, const T* x, const T* z, const T* weight, const T* bias, T* dx, T* dz,
              typename Acc<T>::type* dweight, typename Acc<T>::type* dbias, typename Acc<T>::type* workspace,
              void* stream) {
  using S = typename Storage<T>::type;
  using A = typename Acc<T>::type;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const Params<A> p = params_of<A>(s);
  const bool params = dweight != nullptr && dbias != nullptr;
  const ParamPlan plan = param_plan(p.rows, p.channels);
  // The workspace: each group's mu and rstd, then the parts' dweight and dbias sums.
  A* const stats = params ? workspace : nullptr;
  A* const dw_ws = params ? workspace + 2 * p.instances : nullptr;
  A* const db_ws = params ? dw_ws + plan.parts * p.channels : nullptr;
  const auto in = [](const T* t) { return reinterpret_cast<const S*>(t); };
  if (p.instances > 0) {
    launch(gated_backward<S, A>, group_blocks(p.instances), dim3(kThreads), 0, cuda_stream, p, in(dy), in(x),
           in(z), in(weight), in(bias), reinterpret_cast<S*>(dx), reinterpret_cast<S*>(dz), stats);
  }
  if (!params || p.channels == 0) return;
  if (p.rows == 0) {
    // No row: every sum is empty, written as the zeros of one part.
    launch(param_finish<A>, dim3(static_cast<unsigned>(ceil_div(p.channels, kThreads))), dim3(kThreads), 0,
           cuda_stream, p.channels, int64_t(0), dw_ws, db_ws, dweight, dbias);
    return;
  }
  launch(gated_param_parts<S, A>, dim3(static_cast<unsigned>(plan.parts * plan.col_blocks)), dim3(kThreads), 0,
         cuda_stream, p, plan, in(dy), in(x), in(z), static_cast<const A*>(stats), dw_ws, db_ws);
  launch(param_finish<A>, dim3(static_cast<unsigned>(ceil_div(p.channels, kThreads))), dim3(kThreads), 0,
         cuda_stream, p.channels, plan.parts, static_cast<const A*>(dw_ws), static_cast<const A*>(db_ws), dweight,
         dbias);
}

int64_t workspace_elements(const Shape& s) {
  return 2 * s.rows * s.num_groups() + 2 * param_plan(s.rows, s.channels).parts * std::max<int64_t>(1, s.channels);
}

#define PLN_INSTANTIATE(T)                                                                                       \
  template void forward<T>(const Shape&, const T*, const T*, const T*, const T*, T*, T*, T*, void*);             \
  template void backward<T>(const Shape&, const T*, const T*, const T*, const T*, const T*, T*, T*,              \
                            Acc<T>::type*, Acc<T>::type*, Acc<T>::type*, void*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
PLN_INSTANTIATE(half_t)
PLN_INSTANTIATE(bfloat16_t)
#undef PLN_INSTANTIATE

}  // namespace gated
}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
