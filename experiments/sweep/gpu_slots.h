#pragma once
// The GPUs a local grid (sweep/local_launcher.h) spreads its `device=cuda`
// cells over, one visible GPU per worker process.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// The GPUs a local grid spreads its `device=cuda` cells over: each cell is
/// given the least busy one (the first on a tie) as its only visible GPU.
class GpuSlots {
 public:
  /// `count` GPUs, named by the entries of `visible_mask` (CUDA_VISIBLE_DEVICES) where it lists them.
  GpuSlots(int64_t count, const char* visible_mask);
  /// The GPUs this process sees.
  static GpuSlots visible();
  size_t count() const { return ids_.size(); }
  /// A GPU for the next cell (-1 when there are none).
  int take();
  void give_back(int gpu);
  /// The worker's environment for that GPU: CUDA_VISIBLE_DEVICES naming it alone.
  std::vector<std::pair<std::string, std::string>> environment(int gpu) const;

 private:
  std::vector<std::string> ids_;
  std::vector<int> busy_;
};

}  // namespace pln::exp
