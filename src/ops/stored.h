#pragma once
// The CPU kernels' stored type for a tensor's element type: the 16-bit floats
// as their bits (cpu/storage.h), the others as they are; and pointers to a
// tensor's data as the kernels take them.

#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "cpu/storage.h"

namespace pln::ops {

template <typename scalar_t>
struct Stored {
  using type = scalar_t;
};
template <>
struct Stored<c10::Half> {
  using type = pln::cpu::float16;
};
template <>
struct Stored<c10::BFloat16> {
  using type = pln::cpu::bfloat16;
};
template <typename scalar_t>
using stored_t = typename Stored<scalar_t>::type;
static_assert(sizeof(stored_t<c10::Half>) == sizeof(c10::Half) && sizeof(stored_t<c10::BFloat16>) == sizeof(c10::BFloat16));

/// A tensor of element type scalar_t as the kernels' stored values.
template <typename scalar_t>
auto* stored_ptr(const at::Tensor& t) {
  return reinterpret_cast<stored_t<scalar_t>*>(t.data_ptr<scalar_t>());
}
/// A tensor of the compute type of scalar_t (float for the 16-bit floats).
template <typename scalar_t>
auto* compute_ptr(const at::Tensor& t) {
  return t.data_ptr<pln::cpu::compute_t<stored_t<scalar_t>>>();
}

}  // namespace pln::ops
