// The activation jets' CUDA kernels (src/cuda/activation_jets.cu), run on
// the CPU through HIP-CPU: forward and backward of every activation, float
// and double, one to three directions, against the composite formulas in
// float64 (pln::detail::activation_jet_composite and its autograd gradient);
// an element count that leaves the last block part empty and one larger
// than a grid stride's launch; saturation and NaN; an empty jet.

#include "cuda/activation_jets.h"

#include <gtest/gtest.h>
#include <pln/pln.h>
#include <pln/testing.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using pln::cpu::ActivationJetShape;
using pln::cpu::JetActivation;

struct Named {
  pln::Activation library;
  JetActivation kernel;
  const char* name;
};
const Named kActivations[] = {{pln::Activation::kTanh, JetActivation::kTanh, "tanh"},
                              {pln::Activation::kSat, JetActivation::kSat, "sat"},
                              {pln::Activation::kRelu, JetActivation::kRelu, "relu"},
                              {pln::Activation::kSilu, JetActivation::kSilu, "silu"},
                              {pln::Activation::kSigmoid, JetActivation::kSigmoid, "sigmoid"}};

// max |got - want| / max(1, |want|): relative where values are large, absolute near 0.
double mixed_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kDouble);
  return ((got.to(torch::kDouble) - w).abs() / w.abs().clamp_min(1)).max().item<double>();
}

// The CUDA kernels on a contiguous jet x [1 + 2D, n]: the output and the gradient for dy.
template <typename T>
std::pair<torch::Tensor, torch::Tensor> run_cuda(JetActivation act, const torch::Tensor& x, const torch::Tensor& dy) {
  const ActivationJetShape shape{x.size(1), (x.size(0) - 1) / 2};
  auto y = torch::full_like(x, std::numeric_limits<double>::quiet_NaN());
  auto dx = torch::full_like(x, std::numeric_limits<double>::quiet_NaN());
  pln::cuda::activation_jet_forward<T>(act, shape, x.data_ptr<T>(), y.data_ptr<T>(), nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
  pln::cuda::activation_jet_backward<T>(act, shape, dy.data_ptr<T>(), x.data_ptr<T>(), dx.data_ptr<T>(), nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
  return {y, dx};
}

template <typename T>
void expect_matches_composite(int64_t directions, int64_t n) {
  const auto dtype = std::is_same_v<T, float> ? torch::kFloat : torch::kDouble;
  torch::manual_seed(directions);
  const auto opts = torch::TensorOptions().dtype(dtype);
  const auto x = torch::cat({torch::randn({1, n}, opts) * 4, torch::randn({2 * directions, n}, opts)});
  const auto dy = torch::randn_like(x);
  for (const auto& a : kActivations) {
    SCOPED_TRACE(std::string(a.name) + (std::is_same_v<T, float> ? ", float32" : ", float64") + ", D " +
                 std::to_string(directions) + ", n " + std::to_string(n));
    const auto [y, dx] = run_cuda<T>(a.kernel, x, dy);
    const auto x64 = x.to(torch::kDouble).requires_grad_();
    const auto reference = pln::detail::activation_jet_composite(x64, a.library);
    const auto dx_ref = torch::autograd::grad({reference}, {x64}, {dy.to(torch::kDouble)})[0];
    // As the CPU kernels' test: float computes in float.
    const double tol = std::is_same_v<T, float> ? 5e-6 : 1e-13;
    EXPECT_LT(mixed_error(y, reference), tol);
    EXPECT_LT(mixed_error(dx, dx_ref), tol);
  }
}

TEST(CudaActivationJetsOnCpu, MatchCompositeFormulas) {
  // 300: two blocks of 256 threads, the second part empty; 2,200,000: more
  // than the 8192 blocks of a launch, so threads stride.
  for (int64_t D : {1, 2, 3}) {
    expect_matches_composite<float>(D, 300);
    expect_matches_composite<double>(D, 300);
  }
  expect_matches_composite<double>(1, 2200000);
}

TEST(CudaActivationJetsOnCpu, SaturationAndNaN) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    SCOPED_TRACE(dtype == torch::kFloat ? "float32" : "float64");
    const auto z = torch::tensor({-inf, -1e30, -40.0, 0.0, 40.0, 1e30, inf, nan}, dtype);
    const auto x = torch::stack({z, torch::ones_like(z), torch::ones_like(z)});
    const auto dy = torch::ones_like(x);
    for (const auto& a : kActivations) {
      SCOPED_TRACE(a.name);
      const auto [y, dx] =
          dtype == torch::kFloat ? run_cuda<float>(a.kernel, x, dy) : run_cuda<double>(a.kernel, x, dy);
      // Finite but at +-inf (ReLU's and SiLU's value there), NaN at NaN.
      const auto finite = torch::isfinite(y.narrow(1, 1, 5)).all().item<bool>() &&
                          torch::isfinite(dx.narrow(1, 0, 7)).all().item<bool>();
      EXPECT_TRUE(finite) << y << dx;
      EXPECT_TRUE(torch::isnan(y.select(1, 7)).all().item<bool>()) << y;
      EXPECT_TRUE(torch::isnan(dx.select(1, 7)).all().item<bool>()) << dx;
    }
    const auto tanh = run_cuda<double>(JetActivation::kTanh, x.to(torch::kDouble), dy.to(torch::kDouble)).first;
    EXPECT_EQ(tanh[0][0].item<double>(), -1);
    EXPECT_EQ(tanh[0][6].item<double>(), 1);
    EXPECT_EQ(tanh[1][6].item<double>(), 0);
  }
}

TEST(CudaActivationJetsOnCpu, EmptyJetLaunchesNothing) {
  pln::cuda::activation_jet_forward<float>(JetActivation::kTanh, ActivationJetShape{0, 1}, nullptr, nullptr, nullptr);
  pln::cuda::activation_jet_backward<double>(JetActivation::kSilu, ActivationJetShape{0, 2}, nullptr, nullptr, nullptr,
                                             nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
}

}  // namespace
