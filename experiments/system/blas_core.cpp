#include "system/blas_core.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

namespace pln::exp {

namespace {

// Set beside OPENBLAS_CORETYPE when pln chose it: the core OpenBLAS had taken.
constexpr const char* kReplacedVariable = "PLN_OPENBLAS_CORE_REPLACED";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

const char* to_string(VectorTier tier) {
  switch (tier) {
    case VectorTier::kSse: return "SSE";
    case VectorTier::kAvx: return "AVX";
    case VectorTier::kAvx2: return "AVX2";
    case VectorTier::kAvx512: return "AVX-512";
    case VectorTier::kUnknown: break;
  }
  return "unknown";
}

VectorTier openblas_core_tier(const std::string& core) {
  // OpenBLAS 0.3's x86-64 DYNAMIC_ARCH cores (driver/others/dynamic.c).
  static const std::map<std::string, VectorTier> tiers = {
      {"katmai", VectorTier::kSse},        {"coppermine", VectorTier::kSse},   {"northwood", VectorTier::kSse},
      {"prescott", VectorTier::kSse},      {"banias", VectorTier::kSse},       {"atom", VectorTier::kSse},
      {"core2", VectorTier::kSse},         {"penryn", VectorTier::kSse},       {"dunnington", VectorTier::kSse},
      {"nehalem", VectorTier::kSse},       {"opteron", VectorTier::kSse},      {"opteron(sse3)", VectorTier::kSse},
      {"barcelona", VectorTier::kSse},     {"bobcat", VectorTier::kSse},       {"nano", VectorTier::kSse},
      {"sandybridge", VectorTier::kAvx},   {"bulldozer", VectorTier::kAvx},    {"piledriver", VectorTier::kAvx},
      {"steamroller", VectorTier::kAvx},   {"excavator", VectorTier::kAvx},    {"haswell", VectorTier::kAvx2},
      {"zen", VectorTier::kAvx2},          {"skylakex", VectorTier::kAvx512},  {"cooperlake", VectorTier::kAvx512},
      {"sapphirerapids", VectorTier::kAvx512}};
  const auto it = tiers.find(lower(core));
  return it == tiers.end() ? VectorTier::kUnknown : it->second;
}

#if defined(__x86_64__) || defined(__i386__)
VectorTier cpu_tier() {
  __builtin_cpu_init();
  // libgcc's checks include the operating system's support (XCR0) for the
  // AVX and AVX-512 registers.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd")) {
    return VectorTier::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorTier::kAvx2;
  if (__builtin_cpu_supports("avx")) return VectorTier::kAvx;
  return VectorTier::kSse;
}
#else
// The tiers are those of OpenBLAS's x86-64 kernels. On aarch64 its
// DYNAMIC_ARCH cores are named for CPU designs (NeoverseN1, NeoverseV1,
// ThunderX2T99, ...) with the generic ARMV8 below them, and no order of
// instruction sets pln could rank a choice by; pip's aarch64 torch uses
// NVIDIA's NVPL BLAS rather than OpenBLAS. kUnknown: OpenBLAS's choice stands.
VectorTier cpu_tier() { return VectorTier::kUnknown; }
#endif

std::string openblas_core_for(VectorTier tier) {
  switch (tier) {
    case VectorTier::kAvx512: return "SkylakeX";
    case VectorTier::kAvx2: return "Haswell";
    case VectorTier::kAvx: return "Sandybridge";
    default: return "";
  }
}

BlasCoreVerdict judge_blas_core(const std::string& chosen, VectorTier cpu, const char* user_coretype,
                                const char* replaced) {
  const VectorTier tier = openblas_core_tier(chosen);
  if (chosen.empty() || tier == VectorTier::kUnknown || cpu == VectorTier::kUnknown) return {};
  if (replaced != nullptr && user_coretype != nullptr) {
    return {"", fmt::format("OpenBLAS chose its {} kernels ({}) for this {} CPU; pln set OPENBLAS_CORETYPE={}",
                            replaced, to_string(openblas_core_tier(replaced)), to_string(cpu), user_coretype)};
  }
  if (tier >= cpu) return {};
  const std::string better = openblas_core_for(cpu);
  if (user_coretype != nullptr) {
    return {"", fmt::format("OpenBLAS runs its {} kernels ({}), as OPENBLAS_CORETYPE={} asks, on a {} CPU "
                            "(its own kernels: OPENBLAS_CORETYPE={})",
                            chosen, to_string(tier), user_coretype, to_string(cpu), better)};
  }
  const bool far_below = static_cast<int>(cpu) - static_cast<int>(tier) >= 2;
  if (far_below) return {better, ""};
  return {"", fmt::format("OpenBLAS chose its {} kernels ({}) for this {} CPU; OPENBLAS_CORETYPE={} may be faster",
                          chosen, to_string(tier), to_string(cpu), better)};
}

std::string openblas_core() {
  using GetCoreName = char* (*)();
  if (auto fn = reinterpret_cast<GetCoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    const char* name = fn();
    return name != nullptr ? name : "";
  }
  return "";
}

BlasCoreVerdict blas_core_verdict() {
  return judge_blas_core(openblas_core(), cpu_tier(), std::getenv("OPENBLAS_CORETYPE"),
                         std::getenv(kReplacedVariable));
}

std::vector<std::pair<std::string, std::string>> blas_core_environment() {
  const BlasCoreVerdict verdict = blas_core_verdict();
  if (verdict.replacement.empty()) return {};
  return {{"OPENBLAS_CORETYPE", verdict.replacement}, {kReplacedVariable, openblas_core()}};
}

}  // namespace pln::exp
