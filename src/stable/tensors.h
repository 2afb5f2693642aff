#pragma once
// What the stable-ABI operators share: tensors as the CPU kernels take them
// (the stored type of each dtype, the compute type's pointers), the checks'
// error, and the texts errors print (shapes, dtypes, devices) as LibTorch
// prints them, so that an error reads the same from either library.

#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/storage.h"

namespace pln::stable {

using torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;
using OptionalTensor = std::optional<Tensor>;

/// A message from its parts, each printed with operator<<.
template <typename... Parts>
std::string text(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

/// Throws the error LibTorch's stable ABI carries to Python (RuntimeError) unless `ok`.
template <typename... Parts>
void check(bool ok, const Parts&... parts) {
  STD_TORCH_CHECK(ok, text(parts...));
}

/// A tensor's sizes.
std::vector<int64_t> sizes_of(const Tensor& t);
/// "[2, 3, 4]", as LibTorch prints sizes.
std::string shape_text(const std::vector<int64_t>& sizes);
inline std::string shape_text(const Tensor& t) { return shape_text(sizes_of(t)); }
/// "Float", "BFloat16", ...: LibTorch's names of the dtypes.
const char* dtype_text(ScalarType type);
/// "cpu", "cuda:0", ...
std::string device_text(const Tensor& t);
bool same_device(const Tensor& a, const Tensor& b);
/// float32, float64, float16 or bfloat16: the floating types the kernels take.
bool is_floating(ScalarType type);

/// float for float16 and bfloat16, else the input's: the type the kernels
/// compute in and keep the statistics in.
inline ScalarType stats_type(ScalarType input) {
  return input == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
}

/// f(S()) with S the kernels' stored type of `type` (float, double, float16,
/// bfloat16); an error for any other.
template <typename F>
void with_stored_type(ScalarType type, const char* op, F f) {
  switch (type) {
    case ScalarType::Float: return f(float());
    case ScalarType::Double: return f(double());
    case ScalarType::Half: return f(pln::cpu::float16());
    case ScalarType::BFloat16: return f(pln::cpu::bfloat16());
    default: check(false, op, ": the fused CPU kernels take floating-point input, got ", dtype_text(type));
  }
}

template <typename S>
S* stored(const Tensor& t) {
  return static_cast<S*>(t.data_ptr());
}
template <typename S>
pln::cpu::compute_t<S>* computed(const Tensor& t) {
  return static_cast<pln::cpu::compute_t<S>*>(t.data_ptr());
}

/// An affine parameter as the kernels read it: its values in `type`,
/// contiguous, or `count` values of `fill`.
Tensor affine_or(const OptionalTensor& p, ScalarType type, const Tensor& like, int64_t count, double fill);

}  // namespace pln::stable
