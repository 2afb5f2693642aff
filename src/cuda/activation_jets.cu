// Fused CUDA kernels of the activation jets; the chain rule is in
// cpu/activation_jets.h. Each activation's derivatives take the forms of the
// CPU kernels that keep their relative accuracy, with the same clamps, so
// that both saturate at the same arguments to the same values (1 - sigmoid as
// e^-|z| times a sigmoid; tanh from e^2z - 1 as expm1, tanh' as
// 4 e^2z / (e^2z + 1)^2), here with the math library's exp and expm1 and, for
// the logistic, a select on the sign of z, which the CPU vocabulary lacks.

#include "cuda/activation_jets.h"

#include "cuda/runtime.h"
#include "cuda/kernels/arithmetic.cuh"

#include <cstdint>

namespace pln::cuda {
inline namespace PLN_CUDA_BUILD {
namespace {

using cpu::ActivationJetShape;
using cpu::JetActivation;

__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }
__device__ __forceinline__ float expm1_of(float v) { return expm1f(v); }
__device__ __forceinline__ double expm1_of(double v) { return expm1(v); }

// phi(z) and its first three derivatives (the third only where the backward asks).
template <typename A>
struct Derivatives {
  A value, d1, d2, d3;
};

// The CPU kernel's formula and clamp, so that both saturate alike: tanh(z) =
// u / (e + 1), e = e^2z, u = e - 1 (expm1), 2z clamped to +-80 (float) or
// +-700 (double), where tanh rounds to +-1 and tanh' is 4 e^-80 or 4 e^-700
// rather than smaller; tanh' = 4 (e / d) / d with d = e + 1 (no overflow),
// tanh'' = -2 tanh tanh', tanh''' = tanh' (6 tanh^2 - 2).
struct Tanh {
  static constexpr bool kCurved = true;
  template <typename A, bool kThird>
  __device__ __forceinline__ static Derivatives<A> at(A z) {
    const A bound = A(sizeof(A) == 4 ? 80 : 700), twice = A(2) * z;
    const A x = twice > bound ? bound : (twice < -bound ? -bound : twice);  // NaN stays NaN
    const A e = exp_of(x), u = expm1_of(x), d = e + A(1);
    const A t = u / d, inverse = A(1) / d;
    const A d1 = A(4) * (e * inverse) * inverse;
    return {t, d1, A(-2) * t * d1, kThird ? d1 * (A(6) * t * t - A(2)) : A(0)};
  }
};

// sat(z) = z q, q = (1 + z^2)^(-1/2), z clamped where z^2 would overflow (as on the CPU);
// sat' = q^3, sat'' = -3 sat q^4, sat''' = 3 q^5 (5 sat^2 - 1).
struct Sat {
  static constexpr bool kCurved = true;
  template <typename A, bool kThird>
  __device__ __forceinline__ static Derivatives<A> at(A z) {
    const A bound = A(sizeof(A) == 4 ? 0x1p63 : 0x1p511);
    const A zc = z > bound ? bound : (z < -bound ? -bound : z);  // NaN stays NaN
    const A q = rsqrt_acc(A(1) + zc * zc), v = zc * q, q2 = q * q, d1 = q2 * q;
    return {v, d1, A(-3) * v * q2 * q2, kThird ? A(3) * d1 * q2 * (A(5) * v * v - A(1)) : A(0)};
  }
};

// relu(z) = max(z, 0), relu' = 1 where z > 0, else 0 (NaN stays NaN); relu'' = 0.
struct Relu {
  static constexpr bool kCurved = false;
  template <typename A, bool kThird>
  __device__ __forceinline__ static Derivatives<A> at(A z) {
    return {z < A(0) ? A(0) : z, z > A(0) ? A(1) : (z <= A(0) ? A(0) : z), A(0), A(0)};
  }
};

// The logistic s and its derivatives at z clamped to +-86 (float) or +-708
// (double), as on the CPU, from e = e^-|z| <= 1: s(|z|) = 1 / (1 + e) and
// s(-|z|) = e s(|z|), so 1 - s never cancels;
// s' = s (1 - s), s'' = s' ((1 - s) - s), s''' = s' (1 - 6 s').
template <typename A>
struct Logistic {
  A z, s, ds, dds, ddds;  // z clamped, s and its derivatives there
};

template <typename A>
__device__ __forceinline__ A logistic_bound() { return A(sizeof(A) == 4 ? 86 : 708); }

template <typename A, bool kThird>
__device__ __forceinline__ Logistic<A> logistic(A z) {
  const A bound = logistic_bound<A>();
  const A zc = z > bound ? bound : (z < -bound ? -bound : z);  // NaN stays NaN
  const A e = exp_of(zc < A(0) ? zc : -zc);
  const A high = A(1) / (A(1) + e), low = e * high;
  const A s = zc < A(0) ? low : high, c = zc < A(0) ? high : low;  // s and 1 - s
  const A ds = high * low, dds = ds * (c - s);
  return {zc, s, ds, dds, kThird ? ds * (A(1) - A(6) * ds) : A(0)};
}

struct Sigmoid {
  static constexpr bool kCurved = true;
  template <typename A, bool kThird>
  __device__ __forceinline__ static Derivatives<A> at(A z) {
    const Logistic<A> l = logistic<A, kThird>(z);
    return {l.s, l.ds, l.dds, l.ddds};
  }
};

// silu(z) = z s: silu' = s + z s', silu'' = 2 s' + z s'', silu''' = 3 s'' + z s''';
// the value takes z itself above the bound and the bound below it, as on the CPU.
struct Silu {
  static constexpr bool kCurved = true;
  template <typename A, bool kThird>
  __device__ __forceinline__ static Derivatives<A> at(A z) {
    const Logistic<A> l = logistic<A, kThird>(z);
    const A value = (z < -logistic_bound<A>() ? -logistic_bound<A>() : z) * l.s;
    return {value, l.s + l.z * l.ds, A(2) * l.ds + l.z * l.dds, kThird ? A(3) * l.dds + l.z * l.ddds : A(0)};
  }
};

template <typename Act, typename A>
__global__ void jet_forward(int64_t elements, int64_t directions, const A* __restrict__ x, A* __restrict__ y) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < elements;
       j += int64_t(gridDim.x) * blockDim.x) {
    const Derivatives<A> f = Act::template at<A, false>(x[j]);
    y[j] = f.value;
    for (int64_t k = 0; k < directions; ++k) {
      const int64_t first = (1 + k) * elements + j, second = (1 + directions + k) * elements + j;
      const A a = x[first], b = x[second];
      y[first] = f.d1 * a;
      y[second] = Act::kCurved ? f.d2 * a * a + f.d1 * b : f.d1 * b;
    }
  }
}

template <typename Act, typename A>
__global__ void jet_backward(int64_t elements, int64_t directions, const A* __restrict__ dy,
                             const A* __restrict__ x, A* __restrict__ dx) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < elements;
       j += int64_t(gridDim.x) * blockDim.x) {
    const Derivatives<A> f = Act::template at<A, true>(x[j]);
    A dz = f.d1 * dy[j];
    for (int64_t k = 0; k < directions; ++k) {
      const int64_t first = (1 + k) * elements + j, second = (1 + directions + k) * elements + j;
      const A g1 = dy[first], g2 = dy[second];
      dx[second] = f.d1 * g2;
      if (Act::kCurved) {
        const A a = x[first], b = x[second];
        dx[first] = f.d1 * g1 + A(2) * f.d2 * a * g2;
        dz += f.d2 * (a * g1 + b * g2) + f.d3 * a * a * g2;
      } else {
        dx[first] = f.d1 * g1;
      }
    }
    dx[j] = dz;
  }
}

// Blocks of a launch over n elements: one thread each, at most 8 * kTargetBlocks blocks (a grid stride beyond).
dim3 element_blocks(int64_t n) {
  return dim3(static_cast<unsigned>(clamp64(ceil_div(n, kThreads), 1, 8 * kTargetBlocks)));
}

template <typename Fn>
void with_activation(JetActivation act, Fn&& fn) {
  switch (act) {
    case JetActivation::kTanh: return fn(Tanh{});
    case JetActivation::kSat: return fn(Sat{});
    case JetActivation::kRelu: return fn(Relu{});
    case JetActivation::kSilu: return fn(Silu{});
    case JetActivation::kSigmoid: return fn(Sigmoid{});
  }
}

}  // namespace

template <typename T>
void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const T* x, T* y, void* stream) {
  if (s.elements == 0) return;
  with_activation(act, [&](auto a) {
    launch(jet_forward<decltype(a), T>, element_blocks(s.elements), dim3(kThreads), 0,
           static_cast<cudaStream_t>(stream), s.elements, s.directions, x, y);
  });
}

template <typename T>
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const T* dy, const T* x, T* dx,
                             void* stream) {
  if (s.elements == 0) return;
  with_activation(act, [&](auto a) {
    launch(jet_backward<decltype(a), T>, element_blocks(s.elements), dim3(kThreads), 0,
           static_cast<cudaStream_t>(stream), s.elements, s.directions, dy, x, dx);
  });
}

#define PLN_INSTANTIATE(T)                                                                                       \
  template void activation_jet_forward<T>(JetActivation, const ActivationJetShape&, const T*, T*, void*);       \
  template void activation_jet_backward<T>(JetActivation, const ActivationJetShape&, const T*, const T*, T*,    \
                                           void*);
PLN_INSTANTIATE(float)
PLN_INSTANTIATE(double)
#undef PLN_INSTANTIATE

}  // namespace PLN_CUDA_BUILD
}  // namespace pln::cuda
