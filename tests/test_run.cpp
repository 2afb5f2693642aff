// A run (experiments/run/): the judgement of OpenBLAS's kernel choice, the
// device key (parsed, amp only on CUDA, a missing GPU refused before anything
// is recorded), the OpenMP wait policy the provenance records and the
// settings a process starts again with (system/start_up.h).

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <system/blas_core.h>
#include <run/device.h>
#include <system/provenance.h>
#include <run/run.h>
#include <system/start_up.h>
#include <spec/experiment.h>
#include <torch/torch.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;

// ---------------------------------------------------------------- BLAS core

TEST(BlasCore, CoreNamesHaveTheirTiersInAnyCase) {
  EXPECT_EQ(openblas_core_tier("Prescott"), VectorTier::kSse);
  EXPECT_EQ(openblas_core_tier("NEHALEM"), VectorTier::kSse);
  EXPECT_EQ(openblas_core_tier("Sandybridge"), VectorTier::kAvx);
  EXPECT_EQ(openblas_core_tier("Zen"), VectorTier::kAvx2);
  EXPECT_EQ(openblas_core_tier("Haswell"), VectorTier::kAvx2);
  EXPECT_EQ(openblas_core_tier("Cooperlake"), VectorTier::kAvx512);
  EXPECT_EQ(openblas_core_tier("skylakex"), VectorTier::kAvx512);
  EXPECT_EQ(openblas_core_tier("Neoversen1"), VectorTier::kUnknown);
  EXPECT_EQ(openblas_core_tier(""), VectorTier::kUnknown);
}

TEST(BlasCore, EachTierHasACoreThatOpenBlasRanksThere) {
  for (VectorTier tier : {VectorTier::kAvx, VectorTier::kAvx2, VectorTier::kAvx512}) {
    EXPECT_EQ(openblas_core_tier(openblas_core_for(tier)), tier) << to_string(tier);
  }
  EXPECT_EQ(openblas_core_for(VectorTier::kSse), "");
}

TEST(BlasCore, SseKernelsOnAnAvx512CpuAreReplaced) {
  // The case seen on a Xeon that OpenBLAS 0.3.21 did not know.
  const auto verdict = judge_blas_core("Prescott", VectorTier::kAvx512, nullptr, nullptr);
  EXPECT_EQ(verdict.replacement, "SkylakeX");
  EXPECT_EQ(judge_blas_core("Nehalem", VectorTier::kAvx2, nullptr, nullptr).replacement, "Haswell");
  EXPECT_EQ(judge_blas_core("Sandybridge", VectorTier::kAvx512, nullptr, nullptr).replacement, "SkylakeX");
}

TEST(BlasCore, KernelsOneTierBelowAreKeptWithANote) {
  const auto verdict = judge_blas_core("Haswell", VectorTier::kAvx512, nullptr, nullptr);
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_NE(verdict.note.find("OpenBLAS chose its Haswell kernels (AVX2) for this AVX-512 CPU"), std::string::npos)
      << verdict.note;
  EXPECT_NE(verdict.note.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << verdict.note;
}

TEST(BlasCore, KernelsAtTheCpusTierOrUnknownAreLeftAlone) {
  for (const char* core : {"Zen", "Haswell", "Cooperlake"}) {
    const auto verdict = judge_blas_core(core, VectorTier::kAvx2, nullptr, nullptr);
    EXPECT_EQ(verdict.replacement, "") << core;
    EXPECT_EQ(verdict.note, "") << core;
  }
  EXPECT_EQ(judge_blas_core("Neoversen1", VectorTier::kAvx512, nullptr, nullptr).replacement, "");
  EXPECT_EQ(judge_blas_core("", VectorTier::kAvx512, nullptr, nullptr).replacement, "");  // not OpenBLAS
}

TEST(BlasCore, TheUsersCoreTypeWins) {
  const auto verdict = judge_blas_core("Prescott", VectorTier::kAvx512, "Prescott", nullptr);
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_NE(verdict.note.find("as OPENBLAS_CORETYPE=Prescott asks"), std::string::npos) << verdict.note;
  EXPECT_EQ(judge_blas_core("SkylakeX", VectorTier::kAvx512, "SkylakeX", nullptr).note, "");
}

TEST(BlasCore, AReplacementIsRecordedWithWhatOpenBlasHadChosen) {
  const auto verdict = judge_blas_core("SkylakeX", VectorTier::kAvx512, "SkylakeX", "Prescott");
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_EQ(verdict.note,
            "OpenBLAS chose its Prescott kernels (SSE) for this AVX-512 CPU; pln set OPENBLAS_CORETYPE=SkylakeX");
}

#if defined(__x86_64__) || defined(__i386__)
TEST(BlasCore, ThisCpuHasATier) { EXPECT_NE(cpu_tier(), VectorTier::kUnknown); }
#else
// No x86-64 tiers elsewhere: whatever OpenBLAS chose stands.
TEST(BlasCore, OtherArchitecturesKeepOpenBlasChoice) {
  EXPECT_EQ(cpu_tier(), VectorTier::kUnknown);
  EXPECT_EQ(judge_blas_core("ARMV8", cpu_tier(), nullptr, nullptr).replacement, "");
}
#endif

// ------------------------------------------------------------------ devices

// The error asking for GPU `text` gives on this machine: no CUDA in this
// LibTorch, no GPU visible, or (with GPUs) an index past them.
std::string expected_cuda_error(const std::string& text) {
  if (!torch_has_cuda()) return fmt::format("device '{}': this LibTorch ({}) was built without CUDA", text, TORCH_VERSION);
  if (torch::cuda::device_count() == 0) return fmt::format("device '{}': no CUDA GPU is visible", text);
  return fmt::format("device '{}': only {} CUDA GPU(s) visible", text, torch::cuda::device_count());
}

TEST(Device, ParsesAndNamesWhatIsWrong) {
  EXPECT_EQ(parse_device("cpu"), torch::Device(torch::kCPU));
  for (const char* bad : {"gpu", "CUDA", "cuda:", "cuda:-1", "cuda:01", "cuda:0:1", "cpu:0", ""}) {
    EXPECT_EQ(error_of([&] { parse_device(bad); }), fmt::format("device '{}': expected cpu, cuda or cuda:N", bad))
        << bad;
  }
  const std::string beyond = "cuda:" + std::to_string(torch::cuda::device_count());
  EXPECT_NE(error_of([&] { parse_device(beyond); }).find(expected_cuda_error(beyond)), std::string::npos);
  if (torch::cuda::device_count() == 0) {
    EXPECT_NE(error_of([&] { parse_device("cuda"); }).find(expected_cuda_error("cuda")), std::string::npos);
  } else {
    EXPECT_EQ(parse_device("cuda"), torch::Device(torch::kCUDA, 0));
    EXPECT_NE(device_record(parse_device("cuda")).at("device_name").get<std::string>(), machine_description());
  }
}

TEST(Device, AmpIsBf16OnCudaOnly) {
  const auto resolve = [](const char* family, const std::vector<std::string>& sets) {
    return resolve_config(find_experiment(family), "smoke", sets);
  };
  EXPECT_EQ(error_of([&] { resolve("cnn", {"amp=bf16"}); }), "cnn: amp=bf16 is autocast on CUDA; device is cpu");
  EXPECT_NE(error_of([&] { resolve("vit", {"amp=fp8"}); }).find("vit: amp must be one of none|bf16, got 'fp8'"),
            std::string::npos);
  EXPECT_EQ(resolve("vit", {"amp=none"}).at("amp"), "none");
  // Whether the GPU is there is the run's to check, when it starts.
  EXPECT_EQ(resolve("vgg", {"amp=bf16", "device=cuda:3"}).at("amp"), "bf16");
}

// Every family takes a device key; a device this machine lacks fails before
// the run starts, naming it, and nothing is recorded.
TEST(Device, EveryExperimentTakesTheKeyAndRefusesAMissingGpu) {
  const std::string missing = "cuda:" + std::to_string(torch::cuda::device_count());
  for (const auto& e : experiments()) {
    EXPECT_EQ(e.preset("smoke").at("device").get<std::string>(), "cpu") << e.name;
    const auto dir = fresh_dir("device-" + e.name);
    RunRequest request;
    request.preset = "smoke";
    request.out = dir;
    request.sets = {"device=" + missing};
    EXPECT_NE(error_of([&] { run_experiment(e, request); }).find(expected_cuda_error(missing)), std::string::npos)
        << e.name;
    EXPECT_FALSE(fs::exists(dir / "config.json")) << e.name;
    fs::remove_all(dir);
  }
  for (const char* name : {"cnn", "vgg", "vit"}) {
    EXPECT_EQ(find_experiment(name).preset("smoke").at("amp").get<std::string>(), "none") << name;
  }
}

// ---------------------------------------------------------- OpenMP waiting

TEST(Threads, OpenMPWaitPolicyIsReadFromTheEnvironment) {
  // Saved and put back: the test binary's own OpenMP read them at start-up.
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* value = std::getenv(name);
    saved[name] = value ? std::optional<std::string>(value) : std::nullopt;
    ::unsetenv(name);
  }
  EXPECT_EQ(openmp_wait_policy(), "default");
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  EXPECT_EQ(openmp_wait_policy(), "GOMP_SPINCOUNT=1000");
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);  // the policy a user names wins
  EXPECT_EQ(openmp_wait_policy(), "OMP_WAIT_POLICY=PASSIVE");
  for (const auto& [name, value] : saved) {
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
}

// ----------------------------------------------------------------- start-up

std::vector<std::string> names(const std::vector<EnvSetting>& settings) {
  std::vector<std::string> out;
  for (const EnvSetting& s : settings) out.push_back(s.name + "=" + s.value);
  return out;
}

TEST(StartUp, EverySettingALibraryLacksComesInOneRestart) {
  StartState state;
  state.blas = {{"OPENBLAS_CORETYPE", "SkylakeX"}, {"PLN_OPENBLAS_CORE_REPLACED", "Prescott"}};
  EXPECT_EQ(names(start_settings(state)),
            (std::vector<std::string>{"GOMP_SPINCOUNT=30000", "OPENBLAS_CORETYPE=SkylakeX",
                                      "PLN_OPENBLAS_CORE_REPLACED=Prescott"}));
  state.blas.clear();
  EXPECT_EQ(names(start_settings(state)), (std::vector<std::string>{"GOMP_SPINCOUNT=30000"}));
}

TEST(StartUp, NothingToAddMeansNoRestart) {
  for (auto tweak : {+[](StartState& s) { s.user_wait_policy = true; }, +[](StartState& s) { s.one_thread = true; },
                     +[](StartState& s) { s.one_cpu = true; }}) {
    StartState state;
    tweak(state);
    EXPECT_TRUE(start_settings(state).empty());
  }
  StartState again;  // a process started again never starts a third time, whatever it would add
  again.started_again = true;
  again.blas = {{"OPENBLAS_CORETYPE", "SkylakeX"}};
  EXPECT_TRUE(start_settings(again).empty());
}

TEST(StartUp, TheMarkOfARestartIsNotInherited) {
  ::setenv("PLN_STARTED_AGAIN_WITH", "GOMP_SPINCOUNT=30000", 1);
  std::string pln = "pln";
  char* argv[] = {pln.data(), nullptr};
  EXPECT_TRUE(start_state(argv).started_again);
  EXPECT_EQ(std::getenv("PLN_STARTED_AGAIN_WITH"), nullptr);  // a child this process starts is no restart
  EXPECT_EQ(how_started(), "again with GOMP_SPINCOUNT=30000");
  EXPECT_FALSE(start_state(argv).started_again);
}

TEST(StartUp, ThreadsFromTheCommandLine) {
  std::vector<std::string> words = {"pln", "pinn", "--threads", "1"};
  auto state_of = [&] {
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    return start_state(argv.data());
  };
  EXPECT_TRUE(state_of().one_thread);
  words = {"pln", "pinn", "--threads=1"};
  EXPECT_TRUE(state_of().one_thread);
  words = {"pln", "pinn", "--threads", "2"};
  EXPECT_FALSE(state_of().one_thread);
  words = {"pln", "pinn", "--threads=16"};
  EXPECT_FALSE(state_of().one_thread);
}

}  // namespace
}  // namespace pln::exp
