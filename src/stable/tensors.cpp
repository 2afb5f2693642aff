#include "stable/tensors.h"

namespace pln::stable {

std::vector<int64_t> sizes_of(const Tensor& t) {
  std::vector<int64_t> sizes(static_cast<size_t>(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) sizes[static_cast<size_t>(d)] = t.size(d);
  return sizes;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) {
  out << "[";
  for (size_t d = 0; d < shape.sizes.size(); ++d) out << (d ? ", " : "") << shape.sizes[d];
  return out << "]";
}

const char* dtype_text(ScalarType type) { return torch::headeronly::toString(type); }

std::ostream& operator<<(std::ostream& out, const Place& place) {
  using torch::headeronly::DeviceType;
  out << (place.type == DeviceType::CPU    ? "cpu"
          : place.type == DeviceType::CUDA ? "cuda"
          : place.type == DeviceType::Meta ? "meta"
                                           : "device");
  if (place.index >= 0) out << ":" << place.index;
  return out;
}

size_t StableFacts::element_size(ScalarType type) {
  switch (type) {
    case ScalarType::Double: return 8;
    case ScalarType::Float: return 4;
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    default: return 0;  // not floating: param_type_fits has refused it already
  }
}

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
