// Every impossible option and bad input raises c10::Error naming the expected
// and the actual value.

#include <gtest/gtest.h>

#include "reference.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

namespace pln::test {
namespace {

// Runs f, expects a c10::Error whose message contains every fragment.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error raised";
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(msg.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << msg;
    }
  }
}

TEST(Errors, IndivisibleGroupingAtConstruction) {
  expect_error([] { pln::ParallelLN(ParallelLNOptions(10, 4)); }, {"num_features (10)", "num_per_group (4)"});
  expect_error([] { pln::PQNorm(PQNormOptions(10, 3)); }, {"num_features (10)", "num_per_group (3)"});
}

TEST(Errors, NonPositiveSizes) {
  expect_error([] { pln::ParallelLN(ParallelLNOptions(0, 1)); }, {"num_features must be positive, got 0"});
  expect_error([] { pln::ParallelLN(ParallelLNOptions(8, -2)); }, {"num_per_group must be positive, got -2"});
}

TEST(Errors, PBelowOne) {
  expect_error([] { pln::ParallelLN(ParallelLNOptions(8, 4).p(0.5)); }, {"p must be >= 1, got 0.5"});
  expect_error([] { pln::PQNorm(PQNormOptions(8, 4).q(0.0)); }, {"q must be >= 1, got 0"});
}

TEST(Errors, NegativeOrNanEps) {
  expect_error([] { pln::ParallelLN(ParallelLNOptions(8, 4).eps(-1e-3)); }, {"eps must be >= 0, got -0.001"});
  expect_error([] { pln::ParallelLN(ParallelLNOptions(8, 4).eps(std::nan(""))); }, {"eps must be >= 0, got nan"});
}

TEST(Errors, UnknownDim) {
  expect_error([] { pln::ParallelLN(ParallelLNOptions(8, 4).dim(5)); }, {"dim must be 2", "got 5"});
  expect_error([] { layout_from_string("nwhc"); }, {"unknown layout 'nwhc'"});
}

TEST(Errors, WrongRank) {
  pln::ParallelLN norm(ParallelLNOptions(8, 4).dim(4));
  expect_error([&] { norm(torch::randn({2, 8})); }, {"expects a 4-D input [N, C, H, W]", "got a 2-D input of shape [2, 8]"});
  pln::ParallelLN tokens(ParallelLNOptions(8, 4).dim(3));
  expect_error([&] { tokens(torch::randn({2, 3, 4, 8})); }, {"expects a 3-D input", "got a 4-D input"});
}

TEST(Errors, WrongFeatureCount) {
  pln::ParallelLN norm(ParallelLNOptions(8, 4).dim(4));
  expect_error([&] { norm(torch::randn({2, 6, 3, 3})); }, {"expected 8 features on axis 1", "got 6"});
  pln::ParallelLN mlp(ParallelLNOptions(8, 4).dim(2));
  expect_error([&] { mlp(torch::randn({2, 16})); }, {"expected 8 features on axis 1", "got 16"});
  pln::ParallelLN nhwc(ParallelLNOptions(8, 4).layout(Layout::kNHWC));
  expect_error([&] { nhwc(torch::randn({2, 8, 3, 3})); }, {"expected 8 features on axis 3", "got 3"});
}

TEST(Errors, IntegerInput) {
  pln::ParallelLN norm(ParallelLNOptions(8, 4).dim(2));
  expect_error([&] { norm(torch::ones({2, 8}, torch::kLong)); }, {"expected a floating-point input", "Long"});
}

TEST(Errors, MismatchedWeightAndBias) {
  const auto x = torch::randn({2, 8});
  const auto options = ParallelLNOptions(8, 4).dim(2);
  expect_error([&] { functional::parallel_ln(x, options, torch::ones({6})); }, {"weight must have 8 elements", "got 6"});
  expect_error([&] { functional::parallel_ln(x, options, torch::ones({8}), torch::zeros({4})); }, {"bias must have 8 elements", "got 4"});
  expect_error([&] { functional::parallel_ln(x, options, torch::ones({8}, torch::kDouble)); }, {"weight has dtype Double", "input has dtype Float"});
}

TEST(Errors, UndefinedInput) {
  expect_error([] { functional::parallel_ln(torch::Tensor(), ParallelLNOptions(8, 4)); }, {"input tensor is undefined"});
}

// The kernels this build holds: those of the architecture it targets.
#if defined(__x86_64__)
const std::vector<std::string> kBuiltCapabilities = {"base", "avx2", "avx512"};
const std::vector<std::string> kForeignCapabilities = {"neon"};
#elif defined(__aarch64__)
const std::vector<std::string> kBuiltCapabilities = {"base", "neon"};
const std::vector<std::string> kForeignCapabilities = {"avx2", "avx512"};
#else
const std::vector<std::string> kBuiltCapabilities = {"base"};
const std::vector<std::string> kForeignCapabilities = {"avx2", "avx512", "neon"};
#endif

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// PLN_CPU_CAPABILITY picks the kernels (CTest runs the kernel suites once
// more with each lesser capability); a value naming none, or one of another
// architecture, is an error on use.
TEST(Capability, FollowsTheEnvironment) {
  const char* wanted = std::getenv("PLN_CPU_CAPABILITY");
  const std::string name = wanted ? wanted : "";
  const auto x = torch::randn({2, 8});
  if (name.empty()) {
    EXPECT_TRUE(holds(kBuiltCapabilities, pln::cpu_kernels())) << pln::cpu_kernels();
  } else if (holds(kBuiltCapabilities, name)) {
    EXPECT_EQ(pln::cpu_kernels(), name);
  } else if (holds(kForeignCapabilities, name)) {
    std::string built;
    for (const auto& b : kBuiltCapabilities) built += (built.empty() ? "" : ", ") + b;
    expect_error([] { (void)pln::cpu_kernels(); }, {"PLN_CPU_CAPABILITY=" + name + ", but this build's kernels are ",
                                                     "'s: " + built});
    expect_error([&] { (void)functional::parallel_ln(x, ParallelLNOptions(8, 4).dim(2)); },
                 {"PLN_CPU_CAPABILITY=" + name + ", but this build's kernels are "});
  } else {
    expect_error([] { (void)pln::cpu_kernels(); },
                 {"PLN_CPU_CAPABILITY must be base, avx2, avx512 or neon, got '", wanted});
    expect_error([&] { (void)functional::parallel_ln(x, ParallelLNOptions(8, 4).dim(2)); },
                 {"PLN_CPU_CAPABILITY must be base, avx2, avx512 or neon"});
  }
}

TEST(StreamBackward, FollowsTheEnvironment) {
  // 0 and 1 (and unset) only choose how dx is written: the bits are checked
  // by Backward.LargeFeaturesLastGradientIsRowwiseBitForBit, which ctest runs
  // once more with PLN_CPU_STREAM_BACKWARD=1. Any other value fails every
  // backward, whatever its layout.
  const char* wanted = std::getenv("PLN_CPU_STREAM_BACKWARD");
  const std::string value = wanted ? wanted : "";
  const auto backward = [](int64_t C, int64_t g, int64_t dim) {
    const auto x = (dim == 4 ? torch::randn({2, C, 3, 3}) : torch::randn({4, C})).requires_grad_();
    functional::parallel_ln(x, ParallelLNOptions(C, g).dim(dim)).sum().backward();
    return x.grad();
  };
  if (value.empty() || value == "0" || value == "1") {
    EXPECT_TRUE(torch::isfinite(backward(128, 8, 2)).all().item<bool>());
  } else {
    for (const auto& [C, g, dim] : {std::tuple<int64_t, int64_t, int64_t>{128, 8, 2}, {12, 4, 4}}) {
      expect_error([&] { backward(C, g, dim); },
                   {"PLN_CPU_STREAM_BACKWARD must be 0 or 1, got '", wanted});
    }
    torch::NoGradGuard no_grad;  // the forward does not read it
    EXPECT_EQ(functional::parallel_ln(torch::ones({2, 8}), ParallelLNOptions(8, 4).dim(2)).size(1), 8);
  }
}

}  // namespace
}  // namespace pln::test
