#include "stable/tensors.h"

#include <torch/csrc/stable/device.h>

namespace pln::stable {

std::vector<int64_t> sizes_of(const Tensor& t) {
  std::vector<int64_t> sizes(static_cast<size_t>(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) sizes[static_cast<size_t>(d)] = t.size(d);
  return sizes;
}

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t d = 0; d < sizes.size(); ++d) out += (d ? ", " : "") + std::to_string(sizes[d]);
  return out + "]";
}

const char* dtype_text(ScalarType type) { return torch::headeronly::toString(type); }

std::string device_text(const Tensor& t) {
  using torch::headeronly::DeviceType;
  const auto device = t.device();
  const char* type = device.type() == DeviceType::CPU    ? "cpu"
                     : device.type() == DeviceType::CUDA ? "cuda"
                     : device.type() == DeviceType::Meta ? "meta"
                                                         : "device";
  return device.has_index() ? text(type, ":", static_cast<int>(device.index())) : std::string(type);
}

bool same_device(const Tensor& a, const Tensor& b) { return a.device() == b.device(); }

bool is_floating(ScalarType type) {
  return type == ScalarType::Float || type == ScalarType::Double || type == ScalarType::Half ||
         type == ScalarType::BFloat16;
}

Tensor affine_or(const OptionalTensor& p, ScalarType type, const Tensor& like, int64_t count, double fill) {
  if (!p.has_value()) return torch::stable::full({count}, fill, type, std::nullopt, like.device());
  const int64_t flat[] = {-1};
  return torch::stable::contiguous(torch::stable::to(torch::stable::reshape(*p, flat), type));
}

}  // namespace pln::stable
