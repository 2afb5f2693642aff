// parallel_ln_jet: the fused kernels against the composite formulas, both
// against finite differences of parallel_ln along a curve, gradcheck, errors.

#include <gtest/gtest.h>
#include <pln/pln.h>
#include <pln/testing.h>

#include "gradcheck.h"

namespace pln::test {
namespace {

torch::Tensor jet_of_curve(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  // x(t) = a + sum_k b_k t_k + c_k t_k^2 / 2 has the jet (a, b_1..b_D, c_1..c_D) at t = 0.
  return torch::cat({a.unsqueeze(0), b, c});
}

struct JetCase {
  int64_t channels, group, directions;
  bool centering;
};

class JetMatchesFiniteDifferences : public ::testing::TestWithParam<JetCase> {};

TEST_P(JetMatchesFiniteDifferences, ValuesFirstAndSecondDerivatives) {
  const auto [C, g, D, centering] = GetParam();
  torch::manual_seed(3);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t n = 5;
  const auto a = torch::randn({n, C}, opts), b = torch::randn({D, n, C}, opts),
             c = torch::randn({D, n, C}, opts);
  const auto options = ParallelLNOptions(C, g).dim(2).affine(false).centering(centering);
  const auto y = functional::parallel_ln_jet(jet_of_curve(a, b, c), options);
  const auto y0 = functional::parallel_ln(a, options);
  EXPECT_TRUE(torch::allclose(y[0], y0, 1e-12, 1e-12));
  const double h = 1e-4;
  for (int64_t k = 0; k < D; ++k) {
    const auto along = [&](double t) { return functional::parallel_ln(a + b[k] * t + 0.5 * c[k] * t * t, options); };
    const auto plus = along(h), minus = along(-h);
    const auto first = (plus - minus) / (2 * h), second = (plus - 2 * y0 + minus) / (h * h);
    EXPECT_TRUE(torch::allclose(y[1 + k], first, 1e-5, 1e-5))
        << "first derivative, direction " << k << ": max diff " << (y[1 + k] - first).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(y[1 + D + k], second, 1e-4, 1e-4)) << "second derivative, direction " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, JetMatchesFiniteDifferences,
                         ::testing::Values(JetCase{8, 4, 1, true}, JetCase{8, 4, 2, false},
                                           JetCase{16, 8, 1, true}, JetCase{32, 16, 2, true},
                                           JetCase{12, 3, 1, true}, JetCase{12, 12, 2, true},
                                           JetCase{6, 2, 1, false}, JetCase{4, 1, 1, false}),
                         [](const ::testing::TestParamInfo<JetCase>& info) {
                           const auto& c = info.param;
                           return "C" + std::to_string(c.channels) + "_g" + std::to_string(c.group) + "_D" +
                                  std::to_string(c.directions) + (c.centering ? "_PLN" : "_PLS");
                         });

TEST(Jet, FusedMatchesCompositeForwardAndBackward) {
  // C = 96 and 160: rows of 8-group blocks, 4-group blocks and single groups
  // in every mix the vector paths take (g = 4: 3 and 5 blocks of 8; g = 8: 8
  // + 4 and 2 x 8 + 4; g = 16: 4 + 2 and 8 + 2).
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    for (int64_t C : {96, 160}) {
      for (int64_t g : {1, 2, 3, 4, 8, 16, 32, 96}) {
        if (C % g != 0) continue;
        for (int64_t D : {1, 2}) {
          for (bool centering : {true, false}) {
            SCOPED_TRACE(::testing::Message() << "dtype " << dtype << " C " << C << " g " << g << " D " << D
                                              << " centering " << centering);
            torch::manual_seed(g * 10 + D);
            const auto opts = torch::TensorOptions().dtype(dtype);
            const auto x = torch::randn({1 + 2 * D, 3, 7, C}, opts).requires_grad_();
            const auto options = ParallelLNOptions(C, g).dim(3).affine(false).centering(centering);
            const auto fused = functional::parallel_ln_jet(x, options);
            // The kernels accumulate in double, so float results are held to the float64 formulas.
            const auto x64 = x.detach().to(torch::kDouble).requires_grad_();
            const auto reference = detail::parallel_ln_jet_composite(x64, options);
            const double tol = dtype == torch::kDouble ? 1e-10 : 1e-4;
            EXPECT_TRUE(torch::allclose(fused.to(torch::kDouble), reference, tol, tol));
            const auto dy = torch::randn_like(fused);
            const auto dx = torch::autograd::grad({fused}, {x}, {dy})[0].to(torch::kDouble);
            const auto dx_ref = torch::autograd::grad({reference}, {x64}, {dy.to(torch::kDouble)})[0];
            EXPECT_TRUE(torch::allclose(dx, dx_ref, tol, tol)) << "max diff " << (dx - dx_ref).abs().max().item<double>();
          }
        }
      }
    }
  }
}

TEST(Jet, ErrorDoesNotGrowWithTheOffset) {
  // As OffsetParity in test_parity.cpp: values at a + 0.1 * randn, and the
  // reference the composite formulas in float64 on the exactly shifted values.
  const int64_t C = 24, n = 16, D = 2;
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const double tol = dtype == torch::kFloat ? 4e-6 : 1e-12;
    for (int64_t g : {3, 4, 8, 24}) {
      for (double a : {0.0, 1e2, 1e4, 1e6}) {
        SCOPED_TRACE("g " + std::to_string(g) + ", offset " + std::to_string(a) +
                     (dtype == torch::kFloat ? ", float32" : ", float64"));
        torch::manual_seed(21);
        const auto opts = torch::TensorOptions().dtype(dtype);
        const auto value = a + 0.1 * torch::randn({n, C}, opts), parts = torch::randn({2 * D, n, C}, opts);
        const auto jet = torch::cat({value.unsqueeze(0), parts}).requires_grad_();
        const auto options = ParallelLNOptions(C, g).dim(2).affine(false);
        const auto y = functional::parallel_ln_jet(jet, options);
        const auto dy = torch::randn_like(y);
        y.backward(dy);
        const auto jet_r =
            torch::cat({(value.to(torch::kDouble) - a).unsqueeze(0), parts.to(torch::kDouble)}).requires_grad_();
        const auto y_r = detail::parallel_ln_jet_composite(jet_r, options);
        y_r.backward(dy.to(torch::kDouble));
        for (int64_t part = 0; part <= 2 * D; ++part) {
          const auto error = [&](const torch::Tensor& got, const torch::Tensor& want) {
            return (got[part].to(torch::kDouble) - want[part]).abs().max().item<double>() /
                   want[part].abs().max().item<double>();
          };
          EXPECT_LT(error(y, y_r), tol) << "part " << part;
          EXPECT_LT(error(jet.grad(), jet_r.grad()), tol) << "gradient of part " << part;
        }
      }
    }
  }
}

TEST(Jet, AffineScalesEveryPartAndShiftsValuesOnly) {
  torch::manual_seed(4);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({3, 4, 8}, opts);
  const auto w = torch::rand({8}, opts) + 0.5, b = torch::randn({8}, opts);
  const auto options = ParallelLNOptions(8, 4).dim(2);
  const auto plain = functional::parallel_ln_jet(x, options);
  const auto y = functional::parallel_ln_jet(x, options, w, b);
  EXPECT_TRUE(torch::allclose(y[0], plain[0] * w + b));
  EXPECT_TRUE(torch::allclose(y[1], plain[1] * w));
  EXPECT_TRUE(torch::allclose(y[2], plain[2] * w));
}

TEST(Jet, GradcheckAndGradgradcheck) {
  torch::manual_seed(5);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  for (bool centering : {true, false}) {
    const auto x = torch::randn({5, 2, 8}, opts).requires_grad_();
    const auto options = ParallelLNOptions(8, 4).dim(2).centering(centering);
    const Fn f = [&](const std::vector<torch::Tensor>& in) { return functional::parallel_ln_jet(in[0], options); };
    auto r = gradcheck(f, {x});
    EXPECT_TRUE(r.ok) << r.message;
    r = gradgradcheck(f, {x});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(Jet, EmptyBatch) {
  const auto x = torch::zeros({3, 0, 8}, torch::kDouble).requires_grad_();
  const auto y = functional::parallel_ln_jet(x, ParallelLNOptions(8, 4).dim(2));
  EXPECT_EQ(y.sizes(), x.sizes());
  y.sum().backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
}

TEST(JetErrors, RejectBadInput) {
  const auto options = ParallelLNOptions(8, 4).dim(2);
  const auto expect_error = [](const std::function<void()>& fn, const std::string& text) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one containing: " << text;
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what_without_backtrace()).find(text), std::string::npos) << e.what_without_backtrace();
    }
  };
  expect_error([&] { functional::parallel_ln_jet(torch::randn({2, 4, 8}), options); }, "1 + 2D parts on axis 0");
  expect_error([&] { functional::parallel_ln_jet(torch::randn({3, 4, 6}), options); }, "expected 8 features on the last axis, got 6");
  expect_error([&] { functional::parallel_ln_jet(torch::randn({8}), options); }, "rank >= 2, got rank 1");
  expect_error([&] { functional::parallel_ln_jet(torch::randn({3, 4, 8}), ParallelLNOptions(8, 4).p(3)); }, "p = 2 only, got p = 3");
  expect_error([&] { functional::parallel_ln_jet(torch::ones({3, 4, 8}, torch::kLong), options); }, "floating-point jet");
  expect_error([&] { functional::parallel_ln_jet(torch::randn({3, 4, 8}), options, torch::ones({7})); }, "expected 8 affine parameters, got 7");
}

}  // namespace
}  // namespace pln::test
