#pragma once
// How the shared checks (ops/checks.h) read an at::Tensor in libpln: sizes as
// SymInts (symbolic under torch.compile, guarded where a check needs a
// number), LibTorch's error (c10::Error) and its printing.

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <ostream>

#include "ops/checks.h"
#include "ops/ops.h"

namespace pln::ops {

/// A tensor's sizes with one changed (the statistics' shape), printed and
/// compared as LibTorch's sizes are.
struct SymShape {
  c10::SymDimVector sizes;
};
inline bool operator==(c10::SymIntArrayRef a, const SymShape& b) { return a == c10::SymIntArrayRef(b.sizes); }
inline std::ostream& operator<<(std::ostream& out, const SymShape& s) { return out << c10::SymIntArrayRef(s.sizes); }

struct AtenFacts {
  template <class... Parts>
  static void check(bool ok, const Parts&... parts) {
    TORCH_CHECK(ok, parts...);
  }
  static int64_t dim(const at::Tensor& t) { return t.dim(); }
  static c10::SymInt size(const at::Tensor& t, int64_t d) { return t.sym_size(d); }
  static c10::SymInt numel(const at::Tensor& t) { return t.sym_numel(); }
  static int64_t concrete(const c10::SymInt& s) { return s.guard_int(__FILE__, __LINE__); }
  static c10::SymIntArrayRef sizes(const at::Tensor& t) { return t.sym_sizes(); }
  static SymShape stats_sizes(const at::Tensor& t, int64_t axis, int64_t groups) {
    SymShape shape{c10::SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end())};
    shape.sizes[static_cast<size_t>(axis)] = groups;
    return shape;
  }
  static at::ScalarType dtype(const at::Tensor& t) { return t.scalar_type(); }
  static at::ScalarType stats_dtype(const at::Tensor& t) { return stats_type(t.scalar_type()); }
  static bool floating(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }
  static bool floating_type(at::ScalarType type) { return at::isFloatingType(type); }
  static bool half_type(at::ScalarType type) { return type == at::kHalf || type == at::kBFloat16; }
  static size_t element_size(at::ScalarType type) { return c10::elementSize(type); }
  static constexpr at::ScalarType kFloat32 = at::kFloat;
  static c10::Device device(const at::Tensor& t) { return t.device(); }
  static bool same_device(const at::Tensor& a, const at::Tensor& b) { return a.device() == b.device(); }
};

}  // namespace pln::ops
