#pragma once
// The device a run trains on: the `device` key every experiment takes (`cpu`,
// `cuda`, `cuda:N`), checked before anything is written; its record for
// config.json; and mixed precision for the image experiments (`amp=bf16`,
// autocast on CUDA).

#include "spec/config.h"
#include "spec/keys.h"

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// Parses and checks a device: a clear error when it is malformed and, unless
/// `check_present` is false (a command written for another machine), when this
/// LibTorch has no CUDA, when no GPU is visible, or when the index is past
/// the GPUs that are.
torch::Device parse_device(const std::string& text, bool check_present = true);

/// The configuration's `device` key (cpu when it has none), checked.
torch::Device config_device(const Config& config);

/// Whether this LibTorch was built with CUDA.
bool torch_has_cuda();

/// `{"device": "cuda:0", "device_name": "NVIDIA H200"}` (the CPU's model name on cpu).
Config device_record(const torch::Device& device);

namespace key {
/// `device`: cpu (default), cuda or cuda:N; its form is checked with the other
/// keys, whether the GPU is present when the run starts.
Key device();
/// `amp`: none (default), or bf16, autocast to bfloat16 on a CUDA device.
Key amp();
}  // namespace key

/// amp=bf16 needs a CUDA device: throws ConfigError otherwise (a family's check across keys).
void check_amp(const std::string& amp, const std::string& device);

/// Autocast to bfloat16 on CUDA for its lifetime, when enabled; restores the previous state.
class AutocastBF16 {
 public:
  explicit AutocastBF16(bool enabled);
  ~AutocastBF16();
  AutocastBF16(const AutocastBF16&) = delete;
  AutocastBF16& operator=(const AutocastBF16&) = delete;

 private:
  bool enabled_;
  bool previous_ = false;
  at::ScalarType previous_type_ = at::kHalf;
};

}  // namespace pln::exp
