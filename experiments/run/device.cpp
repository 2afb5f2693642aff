#include "run/device.h"

#include "system/provenance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <stdexcept>

#ifdef PLN_TORCH_HAS_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#endif

namespace pln::exp {

bool torch_has_cuda() {
#ifdef PLN_TORCH_HAS_CUDA
  return true;
#else
  return false;
#endif
}

torch::Device parse_device(const std::string& text, bool check_present) {
  if (text == "cpu") return torch::kCPU;
  static const std::regex cuda(R"(cuda(:(0|[1-9][0-9]{0,3}))?)");
  std::smatch match;
  if (!std::regex_match(text, match, cuda)) {
    throw std::invalid_argument(fmt::format("device '{}': expected cpu, cuda or cuda:N", text));
  }
  const int64_t index = match[2].matched ? std::stoll(match[2].str()) : 0;
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  if (!check_present) return device;
  if (!torch_has_cuda()) {
    throw std::invalid_argument(fmt::format(
        "device '{}': this LibTorch ({}) was built without CUDA; build against a CUDA LibTorch "
        "(make test-torch2 builds with pip's torch)", text, TORCH_VERSION));
  }
  const int64_t visible = static_cast<int64_t>(torch::cuda::device_count());
  if (visible == 0) {
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    throw std::invalid_argument(fmt::format("device '{}': no CUDA GPU is visible{}", text,
                                            mask ? fmt::format(" (CUDA_VISIBLE_DEVICES='{}')", mask) : ""));
  }
  if (index >= visible) {
    throw std::invalid_argument(
        fmt::format("device '{}': only {} CUDA GPU(s) visible (cuda:0 to cuda:{})", text, visible, visible - 1));
  }
  return device;
}

torch::Device config_device(const Config& config) {
  return config.contains("device") ? parse_device(get_string(config, "device")) : torch::Device(torch::kCPU);
}

Config device_record(const torch::Device& device) {
  std::string name = machine_description();
#ifdef PLN_TORCH_HAS_CUDA
  if (device.is_cuda()) name = at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->name;
#endif
  return {{"device", device.str()}, {"device_name", name}};
}

namespace key {

Key device() {
  return text("device", "cpu", "cpu|cuda|cuda:N", [](const std::string& t) { (void)parse_device(t, false); },
              "the device to train on");
}

Key amp() { return choice("amp", "none", {"none", "bf16"}, "mixed precision: bf16 is autocast on CUDA"); }

}  // namespace key

void check_amp(const std::string& amp, const std::string& device_text) {
  if (amp != "bf16") return;
  const auto device = parse_device(device_text, false);
  if (!device.is_cuda()) throw ConfigError(fmt::format("amp=bf16 is autocast on CUDA; device is {}", device.str()));
}

AutocastBF16::AutocastBF16(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
#ifdef PLN_TORCH_HAS_CUDA
  previous_ = at::autocast::is_autocast_enabled(at::kCUDA);
  previous_type_ = at::autocast::get_autocast_dtype(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::increment_nesting();
#else
  throw std::logic_error("autocast needs a CUDA LibTorch");
#endif
}

AutocastBF16::~AutocastBF16() {
  if (!enabled_) return;
#ifdef PLN_TORCH_HAS_CUDA
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(at::kCUDA, previous_);
  at::autocast::set_autocast_dtype(at::kCUDA, previous_type_);
#endif
}

}  // namespace pln::exp
