#pragma once
// What the stable-ABI operators share: tensors as the CPU kernels take them
// (the stored type of each dtype, the compute type's pointers), and how the
// shared checks (ops/checks.h) read them: the stable ABI's error, and shapes,
// dtypes and devices printed as LibTorch prints them, so that an error reads
// the same from either library.

#include <torch/csrc/stable/device.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/storage.h"
#include "ops/checks.h"

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
void check_that(bool ok, const Parts&... parts) {
  STD_TORCH_CHECK(ok, text(parts...));
}

/// A tensor's sizes.
std::vector<int64_t> sizes_of(const Tensor& t);
/// "Float", "BFloat16", ...: LibTorch's names of the dtypes.
const char* dtype_text(ScalarType type);
/// float32, float64, float16 or bfloat16: the floating types the kernels take.
bool is_floating(ScalarType type);

/// Sizes, printed as LibTorch prints them ("[2, 3, 4]").
struct Shape {
  std::vector<int64_t> sizes;
  bool operator==(const Shape& other) const { return sizes == other.sizes; }
};
std::ostream& operator<<(std::ostream& out, const Shape& shape);

/// A device, printed as LibTorch prints it ("cpu", "cuda:0").
struct Place {
  torch::headeronly::DeviceType type;
  int index;  ///< -1: none
};
std::ostream& operator<<(std::ostream& out, const Place& place);

/// How ops/checks.h reads a stable tensor.
struct StableFacts {
  template <typename... Parts>
  static void check(bool ok, const Parts&... parts) {
    check_that(ok, parts...);
  }
  static int64_t dim(const Tensor& t) { return t.dim(); }
  static int64_t size(const Tensor& t, int64_t d) { return t.size(d); }
  static int64_t numel(const Tensor& t) { return t.numel(); }
  static int64_t concrete(int64_t size) { return size; }
  static Shape sizes(const Tensor& t) { return {sizes_of(t)}; }
  static Shape stats_sizes(const Tensor& t, int64_t axis, int64_t groups) {
    Shape shape{sizes_of(t)};
    shape.sizes[static_cast<size_t>(axis)] = groups;
    return shape;
  }
  static ScalarType dtype(const Tensor& t) { return t.scalar_type(); }
  static ScalarType stats_dtype(const Tensor& t);
  static bool floating(const Tensor& t) { return is_floating(t.scalar_type()); }
  static bool floating_type(ScalarType type) { return is_floating(type); }
  static bool half_type(ScalarType type) { return type == ScalarType::Half || type == ScalarType::BFloat16; }
  static size_t element_size(ScalarType type);
  static constexpr ScalarType kFloat32 = ScalarType::Float;
  static Place device(const Tensor& t) {
    const auto device = t.device();
    return {device.type(), device.has_index() ? static_cast<int>(device.index()) : -1};
  }
  static bool same_device(const Tensor& a, const Tensor& b) { return a.device() == b.device(); }
};

/// float for float16 and bfloat16, else the input's: the type the kernels
/// compute in and keep the statistics in.
inline ScalarType stats_type(ScalarType input) {
  return input == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
}
inline ScalarType StableFacts::stats_dtype(const Tensor& t) { return stats_type(t.scalar_type()); }

/// f(S()) with S the kernels' stored type of `type` (float, double, float16,
/// bfloat16); an error for any other.
template <typename F>
void with_stored_type(ScalarType type, const char* op, F f) {
  switch (type) {
    case ScalarType::Float: return f(float());
    case ScalarType::Double: return f(double());
    case ScalarType::Half: return f(pln::cpu::float16());
    case ScalarType::BFloat16: return f(pln::cpu::bfloat16());
    default: check_that(false, op, ": the fused CPU kernels take floating-point input, got ", dtype_text(type));
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
