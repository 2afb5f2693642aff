// activation_jet: the fused kernels against the composite formulas in
// float64 (forward and backward, every activation, float and double, every
// direction count), against finite differences (gradcheck, gradgradcheck),
// tanh against torch's to a few units of rounding, saturation and special
// values, the fallback path, errors. The library binary runs once per CPU
// capability (tests/CMakeLists.txt), so each capability's kernels pass these.

#include <gtest/gtest.h>
#include <pln/pln.h>
#include <pln/testing.h>

#include "gradcheck.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace pln::test {
namespace {

const std::vector<std::pair<Activation, std::string>> kActivations = {{Activation::kTanh, "tanh"},
                                                                      {Activation::kSat, "sat"},
                                                                      {Activation::kRelu, "relu"},
                                                                      {Activation::kSilu, "silu"},
                                                                      {Activation::kSigmoid, "sigmoid"}};

// A jet [1 + 2D, rows, C] whose values spread over where each activation
// bends and saturates (|z| up to about 12) and whose derivative parts are of
// order 1.
torch::Tensor random_jet(int64_t directions, int64_t rows, int64_t channels, torch::Dtype dtype) {
  const auto opts = torch::TensorOptions().dtype(dtype);
  const auto z = torch::randn({1, rows, channels}, opts) * 4;
  return torch::cat({z, torch::randn({2 * directions, rows, channels}, opts)});
}

// max |got - want| / max(1, |want|) over a tensor: relative where values are large, absolute near 0.
double mixed_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kDouble);
  return ((got.to(torch::kDouble) - w).abs() / w.abs().clamp_min(1)).max().item<double>();
}

TEST(ActivationJet, FusedMatchesCompositeForwardAndBackward) {
  // 3 x 37 values a part: whole registers of every width and a tail of single lanes.
  for (const auto& [act, name] : kActivations) {
    for (auto dtype : {torch::kDouble, torch::kFloat}) {
      for (int64_t D : {1, 2, 3}) {
        SCOPED_TRACE(name + (dtype == torch::kDouble ? ", float64" : ", float32") + ", D " + std::to_string(D));
        torch::manual_seed(D);
        const auto x = random_jet(D, 3, 37, dtype).requires_grad_();
        const auto fused = functional::activation_jet(x, act);
        ASSERT_EQ(fused.sizes(), x.sizes());
        ASSERT_EQ(fused.scalar_type(), dtype);
        const auto x64 = x.detach().to(torch::kDouble).requires_grad_();
        const auto reference = detail::activation_jet_composite(x64, act);
        // float: the kernels compute in float, some tens of units of rounding of the largest
        // term (the composite formulas run in float err by up to 1.9e-6 on these jets).
        const double tol = dtype == torch::kDouble ? 1e-13 : 5e-6;
        EXPECT_LT(mixed_error(fused, reference), tol);
        const auto dy = torch::randn_like(fused);
        const auto dx = torch::autograd::grad({fused}, {x}, {dy})[0];
        const auto dx_ref = torch::autograd::grad({reference}, {x64}, {dy.to(torch::kDouble)})[0];
        EXPECT_LT(mixed_error(dx, dx_ref), tol);
      }
    }
  }
}

TEST(ActivationJet, AnyTrailingShapeAndNonContiguousInput) {
  torch::manual_seed(2);
  // [3, 5, 4, 6] transposed on its last two axes: a view the function makes contiguous.
  const auto base = torch::randn({3, 5, 6, 4}, torch::kDouble) * 3;
  const auto x = base.transpose(2, 3).requires_grad_();
  ASSERT_FALSE(x.is_contiguous());
  for (const auto& [act, name] : kActivations) {
    SCOPED_TRACE(name);
    const auto y = functional::activation_jet(x, act);
    const auto reference = detail::activation_jet_composite(x, act);
    EXPECT_LT(mixed_error(y, reference), 1e-13);
    const auto dy = torch::randn_like(y);
    EXPECT_LT(mixed_error(torch::autograd::grad({y}, {x}, {dy})[0],
                          torch::autograd::grad({reference}, {x}, {dy})[0]),
              1e-13);
  }
}

TEST(ActivationJet, GradcheckAndGradgradcheck) {
  // The first-order gradient is the fused backward's; a gradient with
  // create_graph goes through the composite formulas, which gradgradcheck
  // differentiates once more.
  for (const auto& [act, name] : kActivations) {
    SCOPED_TRACE(name);
    torch::manual_seed(5);
    auto x = random_jet(2, 2, 5, torch::kDouble) / 2;
    // ReLU's kink: finite differences across it would not be a derivative.
    if (act == Activation::kRelu) x[0] = x[0] + x[0].sign() * 0.1;
    x.requires_grad_();
    const Fn f = [act = act](const std::vector<torch::Tensor>& in) { return functional::activation_jet(in[0], act); };
    auto r = gradcheck(f, {x});
    EXPECT_TRUE(r.ok) << r.message;
    r = gradgradcheck(f, {x});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// The distance in units of rounding between two finite values of the same type.
template <typename T>
double units_apart(T a, T b) {
  using Bits = std::conditional_t<std::is_same_v<T, float>, int32_t, int64_t>;
  const auto ordered = [](T v) {
    Bits bits;
    std::memcpy(&bits, &v, sizeof v);
    return bits < 0 ? std::numeric_limits<Bits>::min() - bits : bits;
  };
  using Unsigned = std::make_unsigned_t<Bits>;
  const Bits low = std::min(ordered(a), ordered(b)), high = std::max(ordered(a), ordered(b));
  return static_cast<double>(static_cast<Unsigned>(high) - static_cast<Unsigned>(low));
}

// The sample of tanh's accuracy test: 0 and, of either sign, 40,001
// magnitudes evenly spaced in log from the dtype's smallest subnormal number
// to 1 (where tanh z = z up to 1e-4 and its expm1 form matters most), 400,001
// evenly spaced from 0 to 40 (the bend, and the saturation at 9 in float and
// 19 in double), and 4,001 evenly spaced in log from 40 to the largest finite
// number (beyond the kernel's clamp of 2z).
template <typename T>
torch::Tensor tanh_sample(torch::Dtype dtype) {
  const auto opts = torch::TensorOptions(torch::kDouble);
  const double tiny = std::numeric_limits<T>::denorm_min(), huge = std::numeric_limits<T>::max();
  const auto magnitudes = torch::cat({torch::logspace(std::log10(tiny), 0, 40001, 10, opts),
                                      torch::linspace(0, 40, 400001, opts),
                                      torch::logspace(std::log10(40.0), std::log10(huge), 4001, 10, opts)})
                              .clamp(tiny, huge);
  return torch::cat({torch::zeros({1}, opts), magnitudes, -magnitudes}).to(dtype);
}

// The kernels' tanh (computed from e^2z - 1 as expm1 and e^2z + 1) against
// torch's over tanh_sample: the most units of rounding apart, and where.
template <typename T>
std::pair<double, double> tanh_units_apart_from_torch(torch::Dtype dtype) {
  const torch::Tensor z = tanh_sample<T>(dtype);
  const auto jet = torch::stack({z, torch::ones_like(z), torch::zeros_like(z)});
  const auto ours = functional::activation_jet(jet, Activation::kTanh)[0].contiguous();
  const auto theirs = torch::tanh(z).contiguous();
  std::pair<double, double> worst{0, 0};
  for (int64_t i = 0; i < z.numel(); ++i) {
    const double apart = units_apart(ours.data_ptr<T>()[i], theirs.data_ptr<T>()[i]);
    if (apart > worst.first) worst = {apart, double(z.data_ptr<T>()[i])};
  }
  return worst;
}

TEST(ActivationJet, TanhWithinAFewUnitsOfRoundingOfTorchs) {
  // src/cpu/activation_jets.cpp states the kernels' error against the exact
  // tanh; torch's adds its own. 5 leaves a unit of margin over the most measured.
  const auto [in_float, at_float] = tanh_units_apart_from_torch<float>(torch::kFloat);
  EXPECT_LE(in_float, 5) << "at z = " << at_float;
  const auto [in_double, at_double] = tanh_units_apart_from_torch<double>(torch::kDouble);
  EXPECT_LE(in_double, 5) << "at z = " << at_double;
}

TEST(ActivationJet, SaturationAndSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    SCOPED_TRACE(dtype == torch::kDouble ? "float64" : "float32");
    const double huge = dtype == torch::kFloat ? 1e38 : 1e300;
    // The smallest subnormal number of the dtype.
    const double tiny = dtype == torch::kFloat ? std::numeric_limits<float>::denorm_min()
                                               : std::numeric_limits<double>::denorm_min();
    const auto z = torch::tensor({-inf, -huge, -1e20, -40.0, -tiny, 0.0, tiny, 40.0, 1e20, huge, inf}, dtype);
    const auto jet = torch::stack({z, torch::ones_like(z), torch::ones_like(z)});
    const auto part = [&](Activation act, int64_t p) {
      return functional::activation_jet(jet, act)[p].to(torch::kDouble);
    };
    const auto expect_at = [](const torch::Tensor& got, const std::vector<std::pair<int64_t, double>>& want,
                              const char* what) {
      for (const auto& [i, w] : want) EXPECT_EQ(got[i].item<double>(), w) << what << " at " << i;
    };
    // tanh and SAT saturate at +-1 with slopes that vanish (SAT's z^2 would overflow beyond 2^63 in float).
    const std::vector<std::pair<int64_t, double>> saturated = {{0, -1}, {1, -1}, {2, -1}, {4, -tiny}, {5, 0},
                                                               {6, tiny}, {8, 1}, {9, 1}, {10, 1}};
    expect_at(part(Activation::kTanh, 0), saturated, "tanh");
    expect_at(part(Activation::kTanh, 0), {{3, -1}, {7, 1}}, "tanh");
    expect_at(part(Activation::kSat, 0), saturated, "sat");
    expect_at(part(Activation::kSat, 1), {{0, 0}, {1, 0}, {5, 1}, {9, 0}, {10, 0}}, "sat'");
    EXPECT_LT(part(Activation::kTanh, 1).max().item<double>(), 1 + 1e-6);
    EXPECT_LT(part(Activation::kTanh, 1)[3].item<double>(), 1e-33);  // 4 e^-80 and less
    EXPECT_EQ(part(Activation::kTanh, 1)[5].item<double>(), 1);
    // ReLU's step is 1 exactly for every positive number, subnormals included, and 0 at 0 and below.
    expect_at(part(Activation::kRelu, 1), {{0, 0}, {1, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 1}, {7, 1}, {9, 1}, {10, 1}},
              "relu'");
    expect_at(part(Activation::kRelu, 0), {{0, 0}, {4, 0}, {5, 0}, {6, tiny}, {7, 40}, {10, inf}}, "relu");
    // The sigmoid and SiLU: finite slopes everywhere, no NaN from inf * 0 at the ends.
    const auto s = part(Activation::kSigmoid, 0);
    EXPECT_LT(s[0].item<double>(), 1e-37);
    EXPECT_EQ(s[10].item<double>(), 1);
    EXPECT_EQ(part(Activation::kSilu, 0)[9].item<double>(), huge == 1e38 ? double(float(1e38)) : huge);
    EXPECT_LT(std::abs(part(Activation::kSilu, 0)[1].item<double>()), 1e-30);
    for (const auto act : {Activation::kSigmoid, Activation::kSilu}) {
      for (int64_t p = 0; p < 3; ++p) {
        const auto values = part(act, p).narrow(0, 0, 10);  // silu(inf) is inf
        EXPECT_TRUE(torch::isfinite(values).all().item<bool>()) << "part " << p << ": " << values;
      }
    }
    EXPECT_EQ(part(Activation::kSilu, 1)[9].item<double>(), 1);
    // NaN in, NaN out, for every activation and every part of the forward and the backward.
    const auto nan_jet = torch::full({3, 17}, std::numeric_limits<double>::quiet_NaN(), dtype).requires_grad_();
    for (const auto& [act, name] : kActivations) {
      const auto y = functional::activation_jet(nan_jet, act);
      EXPECT_TRUE(torch::isnan(y).all().item<bool>()) << name;
      const auto dx = torch::autograd::grad({y}, {nan_jet}, {torch::ones_like(y)})[0];
      EXPECT_TRUE(torch::isnan(dx[0]).all().item<bool>()) << name;
    }
  }
}

TEST(ActivationJet, EmptyJetAndOtherDtypes) {
  const auto empty = torch::zeros({3, 0, 8}, torch::kDouble).requires_grad_();
  for (const auto& [act, name] : kActivations) {
    const auto y = functional::activation_jet(empty, act);
    EXPECT_EQ(y.sizes(), empty.sizes()) << name;
    y.sum().backward();
  }
  EXPECT_EQ(empty.grad().sizes(), empty.sizes());
  // bfloat16 has no fused kernel: the composite formulas, in bfloat16.
  const auto x = random_jet(1, 2, 8, torch::kBFloat16);
  const auto y = functional::activation_jet(x, Activation::kSilu);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y, detail::activation_jet_composite(x, Activation::kSilu)));
}

TEST(ActivationJet, NamesRoundTrip) {
  for (const auto& [act, name] : kActivations) EXPECT_EQ(activation_from_name(name), act) << name;
}

TEST(ActivationJetErrors, RejectBadInput) {
  const auto expect_error = [](const std::function<void()>& fn, const std::string& text) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one containing: " << text;
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what_without_backtrace()).find(text), std::string::npos) << e.what_without_backtrace();
    }
  };
  const auto tanh = Activation::kTanh;
  expect_error([&] { functional::activation_jet(torch::randn({2, 4, 8}), tanh); },
               "1 + 2D parts on axis 0 (values, D first and D second derivatives), got 2");
  expect_error([&] { functional::activation_jet(torch::tensor(1.0), tanh); }, "rank >= 1, got rank 0");
  expect_error([&] { functional::activation_jet(torch::ones({3, 4}, torch::kLong), tanh); },
               "floating-point jet, got Long");
  expect_error([&] { functional::activation_jet(torch::Tensor(), tanh); }, "undefined tensor");
  expect_error([&] { functional::activation_jet(torch::randn({3, 4}), static_cast<Activation>(42)); },
               "unknown activation (enum value 42)");
  expect_error([&] { detail::activation_jet_composite(torch::randn({4, 4}), tanh); }, "1 + 2D parts on axis 0");
  expect_error([&] { activation_from_name("gelu"); }, "tanh, sat, relu, silu or sigmoid, got 'gelu'");
}

}  // namespace
}  // namespace pln::test
