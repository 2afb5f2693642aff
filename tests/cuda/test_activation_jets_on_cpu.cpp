// The activation jets' CUDA kernels (src/cuda/activation_jets.cu), run on
// the CPU through HIP-CPU: forward and backward of every activation, float
// and double, one to three directions, against the composite formulas in
// float64 (pln::detail::activation_jet_composite and its autograd gradient);
// an element count that leaves the last block part empty and one larger
// than a grid stride's launch; saturation and NaN, and saturation as the CPU
// kernels saturate; an empty jet.

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
    // tanh' at the clamp of 2z (700 in double), as on the CPU: 4 e^-700, not 0.
    EXPECT_NEAR(tanh[1][6].item<double>() / (4 * std::exp(-700.0)), 1, 1e-12);
  }
}

// |got - want| / |want| over a tensor, relative however small `want` is down
// to the smallest normal number of `got`'s dtype (below it, subnormal results
// keep fewer digits); 0 where both are equal (infinities included).
double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const double smallest_normal = got.scalar_type() == torch::kFloat ? std::numeric_limits<float>::min()
                                                                    : std::numeric_limits<double>::min();
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  const auto error = ((g - w).abs() / w.abs().clamp_min(smallest_normal)).masked_fill(g == w, 0);
  return error.max().item<double>();
}

// Where the activations saturate, the CUDA kernels clamp as the CPU kernels
// do and take the same formulas there: every part of the forward and the
// backward is the CPU kernels' to a few units of rounding of itself, however
// small (tanh' is 4 e^-80 in float and 4 e^-700 in double beyond the clamp,
// not 0 or an underflowing e^-2|z|).
TEST(CudaActivationJetsOnCpu, SaturateAsTheCpuKernels) {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    SCOPED_TRACE(dtype == torch::kFloat ? "float32" : "float64");
    // Either side of each clamp: tanh's 2z at +-80 and +-700, the logistic's z at +-86 and +-708, SAT's at 2^63 and 2^511.
    std::vector<double> magnitudes = {20, 39, 39.99, 40, 40.01, 41, 43, 44, 50, 85, 86, 87, 100, 349, 350, 351, 400,
                                      707, 708, 709, 1e10, 0x1p62, 0x1p63, 0x1p64, 1e30, 1e38, inf};
    if (dtype == torch::kDouble) magnitudes.insert(magnitudes.end(), {0x1p510, 0x1p511, 0x1p512, 1e300});
    auto z = torch::tensor(magnitudes, torch::kDouble);
    z = torch::cat({z, -z}).to(dtype);
    const auto x = torch::stack({z, torch::ones_like(z), torch::ones_like(z)}).contiguous();
    const auto dy = torch::ones_like(x);
    for (const auto& a : kActivations) {
      SCOPED_TRACE(a.name);
      const auto [y, dx] =
          dtype == torch::kFloat ? run_cuda<float>(a.kernel, x, dy) : run_cuda<double>(a.kernel, x, dy);
      const auto x_cpu = x.clone().requires_grad_();
      const auto y_cpu = pln::functional::activation_jet(x_cpu, a.library);
      const auto dx_cpu = torch::autograd::grad({y_cpu}, {x_cpu}, {dy})[0];
      // Float: both compute in float, with exp and expm1 of their own (a few units of 6e-8 each).
      const double tol = dtype == torch::kFloat ? 1e-5 : 1e-13;
      EXPECT_LT(relative_error(y, y_cpu.detach()), tol) << torch::stack({z, y[1], y_cpu[1]});
      EXPECT_LT(relative_error(dx, dx_cpu), tol) << torch::stack({z, dx[0], dx_cpu[0]});
    }
  }
}

TEST(CudaActivationJetsOnCpu, EmptyJetLaunchesNothing) {
  pln::cuda::activation_jet_forward<float>(JetActivation::kTanh, ActivationJetShape{0, 1}, nullptr, nullptr, nullptr);
  pln::cuda::activation_jet_backward<double>(JetActivation::kSilu, ActivationJetShape{0, 2}, nullptr, nullptr, nullptr,
                                             nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
}

}  // namespace
