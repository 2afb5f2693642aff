// Fused CUDA kernels of Parallel LN; the math is in kernels.h. One header per
// path: features-last rows and large groups (kernels/rows.cuh), NCHW
// (kernels/strided.cuh), over the shared arithmetic (kernels/arithmetic.cuh,
// which also holds param_finish, the last small kernel, summing the workspace
// rows of dweight and dbias in a fixed order: deterministic, no atomics); here
// the launching.
//
// Every loop that holds a shuffle or a __syncthreads runs the same number of
// times in all threads of a block (threads past the end compute on zeros):
// CUDA needs it for __syncthreads, and HIP-CPU, where a shuffle is a barrier
// of the whole block, for both.

#include "cuda/kernels.h"

#include "cuda/runtime.h"
#include "cuda/kernels/rows.cuh"
#include "cuda/kernels/strided.cuh"

#include <algorithm>
#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {

namespace {

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
