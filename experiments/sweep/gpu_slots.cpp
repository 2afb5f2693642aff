#include "sweep/gpu_slots.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace pln::exp {

GpuSlots::GpuSlots(int64_t count, const char* visible_mask) {
  std::vector<std::string> listed;
  if (visible_mask != nullptr) {
    std::stringstream ss(visible_mask);
    for (std::string id; std::getline(ss, id, ',');) listed.push_back(id);
  }
  for (int64_t i = 0; i < count; ++i) ids_.push_back(i < int64_t(listed.size()) ? listed[i] : std::to_string(i));
  busy_.assign(ids_.size(), 0);
}

GpuSlots GpuSlots::visible() {
  return GpuSlots(static_cast<int64_t>(torch::cuda::device_count()), std::getenv("CUDA_VISIBLE_DEVICES"));
}

int GpuSlots::take() {
  if (busy_.empty()) return -1;
  const int gpu = static_cast<int>(std::min_element(busy_.begin(), busy_.end()) - busy_.begin());
  ++busy_[gpu];
  return gpu;
}

void GpuSlots::give_back(int gpu) {
  if (gpu >= 0 && gpu < static_cast<int>(busy_.size()) && busy_[gpu] > 0) --busy_[gpu];
}

std::vector<std::pair<std::string, std::string>> GpuSlots::environment(int gpu) const {
  if (gpu < 0 || gpu >= static_cast<int>(ids_.size())) return {};
  return {{"CUDA_VISIBLE_DEVICES", ids_[gpu]}};
}

}  // namespace pln::exp
