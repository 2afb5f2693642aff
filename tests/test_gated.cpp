// pln::functional::gated_norm: the gated norm of the Mamba-2 and Gated DeltaNet
// hybrids, against its formula in float64, in every dtype, with its gradients.

#include <gtest/gtest.h>

#include <pln/pln.h>

#include <sstream>
#include <string>
#include <tuple>

namespace {

// The formula, written out in float64.
torch::Tensor gated_reference(const torch::Tensor& x, const torch::Tensor& z, int64_t g, const torch::Tensor& w,
                        const torch::Tensor& b, bool centering, const std::string& position, const std::string& act,
                        double eps = 1e-5) {
  const auto xd = x.to(torch::kDouble), zd = z.to(torch::kDouble);
  const auto a = act == "sigmoid" ? zd.sigmoid() : zd * zd.sigmoid();
  const auto h = position == "before" ? xd * a : xd;
  auto hg = h.reshape({-1, h.size(-1) / g, g});
  if (centering) hg = hg - hg.mean(-1, true);
  auto y = (hg / (hg.pow(2).mean(-1, true) + eps).sqrt()).reshape(h.sizes());
  if (w.defined()) y = y * w.to(torch::kDouble);
  if (b.defined()) y = y + b.to(torch::kDouble);
  return position == "after" ? y * a : y;
}

// The message of the c10::Error that `call` raises, or "no error".
template <typename F>
std::string gated_error_message(const F& call) {
  try {
    call();
  } catch (const c10::Error& e) {
    return std::string(e.what_without_backtrace());
  }
  return std::string("no error");
}

using GatedVariant = std::tuple<bool, std::string, std::string>;

class GatedNorm : public ::testing::TestWithParam<GatedVariant> {};

TEST_P(GatedNorm, ForwardAndGradientsMatchTheFormulaInEveryDtype) {
  const auto [centering, position, act] = GetParam();
  torch::manual_seed(0);
  const auto options = pln::GatedNormOptions(64, 16).centering(centering).gate_position(position)
                           .activation(act);
  const auto x0 = torch::randn({3, 5, 64}, torch::kDouble) * 2 + 0.5, z0 = torch::randn({3, 5, 64}, torch::kDouble);
  const auto w0 = torch::rand({64}, torch::kDouble) + 0.5, b0 = torch::randn({64}, torch::kDouble);
  const auto dy = torch::randn({3, 5, 64}, torch::kDouble);
  auto x64 = x0.clone().requires_grad_(), z64 = z0.clone().requires_grad_();
  auto w64 = w0.clone().requires_grad_(), b64 = b0.clone().requires_grad_();
  const auto want = gated_reference(x64, z64, 16, w64, b64, centering, position, act);
  want.backward(dy);
  // Tolerances: float64 to rounding, float32 a few ulps of the largest value, half types one rounding.
  for (const auto& [dtype, tol] : {std::pair{torch::kDouble, 1e-10}, std::pair{torch::kFloat, 2e-5},
                                   std::pair{torch::kBFloat16, 1.6e-2}, std::pair{torch::kHalf, 2e-3}}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto leaf = [dtype = dtype](const torch::Tensor& t) { return t.to(dtype).clone().requires_grad_(); };
    auto x = leaf(x0), z = leaf(z0), w = leaf(w0), b = leaf(b0);
    const auto y = pln::functional::gated_norm(x, z, options, w, b);
    ASSERT_EQ(y.scalar_type(), dtype);
    const double scale = want.abs().max().item<double>();
    EXPECT_LE((y.to(torch::kDouble) - want).abs().max().item<double>(), tol * scale);
    if (dtype == torch::kBFloat16 || dtype == torch::kHalf) continue;  // gradients of rounded inputs differ more
    y.backward(dy.to(dtype));
    for (const auto& [got, ref] : {std::pair{x.grad(), x64.grad()}, std::pair{z.grad(), z64.grad()},
                                   std::pair{w.grad(), w64.grad()}, std::pair{b.grad(), b64.grad()}}) {
      const double ref_scale = ref.abs().max().item<double>() + 1e-12;
      EXPECT_LE((got.to(torch::kDouble) - ref).abs().max().item<double>(), 20 * tol * ref_scale);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, GatedNorm,
                         ::testing::Combine(::testing::Bool(), ::testing::Values("before", "after"),
                                            ::testing::Values("silu", "sigmoid")));

// float16 and bfloat16 are read and written as stored and computed in float32,
// a group at a time: the output and every gradient are the float32 op's on
// the widened tensors, rounded once, bit for bit; with a weight and bias of
// the input's dtype or of float32, on groups with and without a tail.
TEST(GatedNormKernels, HalfTypesAreTheFloat32OpRoundedOnce) {
  torch::manual_seed(3);
  for (const auto dtype : {torch::kBFloat16, torch::kHalf}) {
    for (const auto& [width, g] : {std::pair<int64_t, int64_t>{256, 64}, {300, 100}, {4104, 4104}}) {
      for (const bool centering : {false, true}) {
        for (const std::string position : {"before", "after"}) {
          SCOPED_TRACE(std::string(c10::toString(dtype)) + " g=" + std::to_string(g) + " " + position +
                       (centering ? " centred" : ""));
          const auto options = pln::GatedNormOptions(width, g).centering(centering).gate_position(position);
          const auto x = (torch::randn({5, width}) * 3 + 1).to(dtype), z = torch::randn({5, width}).to(dtype);
          const auto w = (torch::rand({width}) + 0.5).to(dtype), b = torch::randn({width}).to(dtype);
          const auto dy = torch::randn({5, width}).to(dtype);
          const auto leaves = [](std::vector<torch::Tensor> ts) {
            for (auto& t : ts) t = t.detach().clone().requires_grad_();
            return ts;
          };
          auto narrow = leaves({x, z, w, b});
          auto wide = leaves({x.to(torch::kFloat), z.to(torch::kFloat), w.to(torch::kFloat), b.to(torch::kFloat)});
          const auto y = pln::functional::gated_norm(narrow[0], narrow[1], options, narrow[2], narrow[3]);
          const auto y32 = pln::functional::gated_norm(wide[0], wide[1], options, wide[2], wide[3]);
          ASSERT_EQ(y.scalar_type(), dtype);
          EXPECT_TRUE(torch::equal(y, y32.to(dtype)));
          y.backward(dy);
          y32.backward(dy.to(torch::kFloat));
          for (size_t i = 0; i < 4; ++i) {
            ASSERT_EQ(narrow[i].grad().scalar_type(), dtype) << i;
            EXPECT_TRUE(torch::equal(narrow[i].grad(), wide[i].grad().to(dtype))) << "gradient " << i;
          }
        }
      }
    }
  }
}

// The fused CPU kernels' activation (a vectorised exp) over the gate values
// that saturate it, on groups with and without a tail past the last register,
// against the formula in float64; a NaN gate gives NaN where the formula does.
TEST(GatedNormKernels, SaturatedGatesAndLargeGroupsMatchTheFormula) {
  torch::manual_seed(2);
  for (const auto& [width, g] : {std::pair<int64_t, int64_t>{1280, 640}, {4104, 4104}, {300, 100}}) {
    for (const std::string position : {"before", "after"}) {
      for (const std::string act : {"silu", "sigmoid"}) {
        SCOPED_TRACE(std::to_string(g) + " " + position + " " + act);
        const auto options = pln::GatedNormOptions(width, g).gate_position(position).activation(act);
        const auto x0 = torch::randn({4, width}, torch::kDouble) + 0.5;
        auto z0 = torch::randn({4, width}, torch::kDouble) * 40;  // |z| up to ~160: e^-z past float's range
        z0.index_put_({0, 3}, 1e4), z0.index_put_({1, 5}, -1e4), z0.index_put_({2, 7}, 88.5);
        const auto w0 = torch::rand({width}, torch::kDouble) + 0.5, dy = torch::randn({4, width}, torch::kDouble);
        auto x64 = x0.clone().requires_grad_(), z64 = z0.clone().requires_grad_();
        const auto want = gated_reference(x64, z64, g, w0, {}, false, position, act);
        want.backward(dy);
        for (const auto& [dtype, tol] : {std::pair{torch::kDouble, 1e-12}, std::pair{torch::kFloat, 2e-5}}) {
          SCOPED_TRACE(c10::toString(dtype));
          auto x = x0.to(dtype).clone().requires_grad_(), z = z0.to(dtype).clone().requires_grad_();
          const auto y = pln::functional::gated_norm(x, z, options, w0.to(dtype));
          y.backward(dy.to(dtype));
          const auto close = [](const torch::Tensor& got, const torch::Tensor& ref, double tolerance) {
            const double scale = ref.abs().max().item<double>() + 1e-300;
            return (got.to(torch::kDouble) - ref).abs().max().item<double>() / scale <= tolerance;
          };
          EXPECT_TRUE(close(y, want, tol));
          EXPECT_TRUE(close(x.grad(), x64.grad(), 20 * tol));
          EXPECT_TRUE(close(z.grad(), z64.grad(), 20 * tol));
        }
      }
    }
  }
  // A NaN gate: its group (gate before the norm) or its value (after) is NaN, the rest is not.
  for (const std::string position : {"before", "after"}) {
    const auto x = torch::randn({2, 64});
    auto z = torch::randn({2, 64});
    z.index_put_({1, 9}, std::nan(""));
    const auto y = pln::functional::gated_norm(x, z, pln::GatedNormOptions(64, 16).gate_position(position));
    const auto want = gated_reference(x, z, 16, {}, {}, false, position, "silu");
    EXPECT_TRUE(torch::equal(y.isnan(), want.isnan())) << position;
    EXPECT_TRUE(y.isnan().any().item<bool>()) << position;
  }
}

TEST(GatedNormErrors, NameTheProblem) {
  const auto x = torch::randn({4, 32}), z = torch::randn({4, 32});
  const auto message = [](const auto& call) { return gated_error_message(call); };
  const auto opts = pln::GatedNormOptions(32, 8);
  EXPECT_NE(message([&] { pln::functional::gated_norm(x, z.narrow(1, 0, 16), opts); }).find("the gate has shape"),
            std::string::npos);
  EXPECT_NE(message([&] { pln::functional::gated_norm(x, z, pln::GatedNormOptions(32, 5)); })
                .find("num_per_group (5) must be a positive divisor"),
            std::string::npos);
  EXPECT_NE(message([&] { pln::functional::gated_norm(x, z, pln::GatedNormOptions(32, 8).activation("gelu")); })
                .find("activation must be 'silu' or 'sigmoid', got 'gelu'"),
            std::string::npos);
  EXPECT_NE(message([&] { pln::functional::gated_norm(x, z, pln::GatedNormOptions(16, 8)); })
                .find("expected 16 features on the last axis, got 32"),
            std::string::npos);
  EXPECT_NE(message([&] { pln::functional::gated_norm(x, torch::Tensor(), opts); }).find("must be defined"),
            std::string::npos);
  // No features at all (the kernels would divide by the width).
  const auto empty = torch::randn({4, 0});
  EXPECT_NE(message([&] { pln::functional::gated_norm(empty, empty, pln::GatedNormOptions(0, 1)); })
                .find("the input has no features on its last axis"),
            std::string::npos);
}

// The module: its parameters, the functional call it makes, the norm alone
// without a gate, cloning, saving and loading, and its options' errors.
TEST(GatedNormModule, IsTheFunctionalCallWithItsParameters) {
  torch::manual_seed(1);
  pln::GatedNorm norm(pln::GatedNormOptions(48, 16).eps(1e-6).gate_position("after").bias(true));
  ASSERT_TRUE(norm->weight.defined() && norm->bias.defined());
  EXPECT_EQ(norm->weight.sizes(), torch::IntArrayRef({48}));
  EXPECT_TRUE(torch::equal(norm->weight, torch::ones({48})) && torch::equal(norm->bias, torch::zeros({48})));
  {
    torch::NoGradGuard no_grad;
    norm->weight.uniform_(0.5, 1.5);
    norm->bias.normal_();
  }
  const auto x = torch::randn({2, 7, 48}), z = torch::randn({2, 7, 48});
  const auto want = gated_reference(x, z, 16, norm->weight, norm->bias, false, "after", "silu", 1e-6);
  EXPECT_LE((norm(x, z).to(torch::kDouble) - want).abs().max().item<double>(), 2e-5 * want.abs().max().item<double>());
  // Without a gate: the norm alone (PLS here), over the last axis of any rank;
  // the reference is a sigmoid gate of 1e4, which multiplies by 1.
  const auto alone = gated_reference(x, torch::full_like(x, 1e4), 16, norm->weight, norm->bias, false, "before",
                                     "sigmoid", 1e-6);
  EXPECT_LE((norm(x).to(torch::kDouble) - alone).abs().max().item<double>(), 2e-5 * alone.abs().max().item<double>());
  EXPECT_EQ(norm(x.reshape({14, 48})).sizes(), torch::IntArrayRef({14, 48}));

  // Defaults as the models' classes: a weight, no bias; no parameters without affine.
  EXPECT_FALSE(pln::GatedNorm(32, 8)->bias.defined());
  EXPECT_TRUE(pln::GatedNorm(pln::GatedNormOptions(32, 8).affine(false))->parameters().empty());

  std::ostringstream printed;
  printed << *norm;
  EXPECT_EQ(printed.str(), "pln::GatedNorm(48, num_per_group=16, eps=1e-06, centering=false, gate_position=after, "
                           "activation=silu, affine=true, bias=true)");

  const auto copy = std::dynamic_pointer_cast<pln::GatedNormImpl>(norm->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(torch::equal(copy->forward(x, z), norm(x, z)));
  std::stringstream stream;
  torch::save(norm, stream);
  pln::GatedNorm loaded(pln::GatedNormOptions(48, 16).eps(1e-6).gate_position("after").bias(true));
  torch::load(loaded, stream);
  EXPECT_TRUE(torch::equal(loaded(x, z), norm(x, z)));
}

TEST(GatedNormModule, RefusesImpossibleOptionsAndInputs) {
  const auto error = [](const auto& call) { return gated_error_message(call); };
  EXPECT_NE(error([] { pln::GatedNorm(30, 8); }).find("num_features (30) must be divisible by num_per_group (8)"),
            std::string::npos);
  EXPECT_NE(error([] { pln::GatedNorm(pln::GatedNormOptions(32, 8).gate_position("inside")); })
                .find("gate_position must be \"before\" or \"after\""),
            std::string::npos);
  EXPECT_NE(error([] { pln::GatedNorm(pln::GatedNormOptions(32, 8).activation("relu")); })
                .find("activation must be \"silu\" or \"sigmoid\", got \"relu\""),
            std::string::npos);
  EXPECT_NE(error([] { pln::GatedNorm(pln::GatedNormOptions(32, 8).eps(-1)); }).find("eps must be >= 0"),
            std::string::npos);
  pln::GatedNorm norm(32, 8);
  EXPECT_NE(error([&] { norm(torch::randn({4, 16})); }).find("expected 32 features on the last axis"),
            std::string::npos);
  EXPECT_NE(error([&] { norm(torch::randn({4, 32}), torch::randn({4, 16})); }).find("the gate has shape"),
            std::string::npos);
}

}  // namespace
