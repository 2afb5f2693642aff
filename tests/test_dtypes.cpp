// Every dtype through the fused kernels: a bfloat16 or float16 result is the
// float32 op's on the widened inputs, rounded once, bit for bit, forward and
// backward, for every op, layout and a small, mid and large group size; groups
// whose sum of squares overflows the 16-bit type normalise as in float32;
// parameters of another dtype are taken as nn.LayerNorm takes them.

#include <gtest/gtest.h>

#include <pln/pln.h>
#include <pln/testing.h>

#include <string>
#include <vector>

#include "reference.h"

namespace pln::test {
namespace {

struct DtypeCase {
  Layout layout;
  int64_t C;
  int64_t g;
  std::vector<int64_t> shape;
};

// Small (several groups a register, the octet blocks, the tails), mid (a few
// registers a group) and large (blocked sums, pieces) group sizes in every layout.
std::vector<DtypeCase> shapes() {
  std::vector<DtypeCase> out;
  for (Layout layout : {Layout::kNC, Layout::kNTC, Layout::kNCHW, Layout::kNHWC, Layout::kNCL}) {
    for (int64_t g : {1, 4, 8}) out.push_back({layout, 136, g, shape_for(layout, 3, 136, 3, 7)});
    out.push_back({layout, 128, 64, shape_for(layout, 2, 128, 5, 3)});
    out.push_back({layout, 768, 768, shape_for(layout, 2, 768, 2, 3)});
  }
  out.push_back({Layout::kNC, 384, 8, {7, 384}});  // rows of whole octet blocks, one pipeline
  out.push_back({Layout::kNC, 256, 32, {4, 256}});  // register groups
  out.push_back({Layout::kNC, 4096 * 9, 4096 * 9, {2, 4096 * 9}});  // groups split across threads
  return out;
}

std::string name(const DtypeCase& s) {
  return to_string(s.layout) + "_C" + std::to_string(s.C) + "_g" + std::to_string(s.g);
}

// Bitwise equality (NaN equal to NaN), with the first differing value named.
::testing::AssertionResult same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
    return ::testing::AssertionFailure() << "shapes or dtypes differ: " << a.sizes() << " " << a.scalar_type()
                                         << " vs " << b.sizes() << " " << b.scalar_type();
  }
  const auto fa = a.to(torch::kFloat).contiguous().reshape({-1}), fb = b.to(torch::kFloat).contiguous().reshape({-1});
  const auto differs = (fa != fb) & ~(fa.isnan() & fb.isnan());
  if (!differs.any().item<bool>()) return ::testing::AssertionSuccess();
  const int64_t i = differs.nonzero()[0][0].item<int64_t>();
  return ::testing::AssertionFailure() << differs.sum().item<int64_t>() << " of " << fa.numel()
                                       << " values differ; the first, at " << i << ": " << fa[i].item<float>()
                                       << " vs " << fb[i].item<float>();
}

// y and the gradients of x, weight and bias of the op for output gradient dy.
struct Results {
  torch::Tensor y, dx, dweight, dbias;
};

template <typename Op>
Results run(Op op, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, const torch::Tensor& dy) {
  const auto xv = x.detach().requires_grad_(), wv = w.detach().requires_grad_(), bv = b.detach().requires_grad_();
  const auto y = op(xv, wv, bv);
  y.backward(dy);
  return {y.detach(), xv.grad(), wv.grad(), bv.grad()};
}

class HalfTypes : public ::testing::TestWithParam<DtypeCase> {};

// The 16-bit op against the float32 op on the same values widened: its output
// and input gradient are that op's rounded once to the 16-bit type, and with
// float32 parameters (as nn.LayerNorm takes them) so are their gradients.
TEST_P(HalfTypes, AreTheFloatOpRoundedOnce) {
  const DtypeCase& s = GetParam();
  for (auto type : {torch::kBFloat16, torch::kHalf}) {
    for (bool centering : {true, false}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + (centering ? " PLN" : " PLS"));
      torch::manual_seed(3);
      const auto x = (torch::randn(s.shape) * 3 + 1).to(type);
      const auto dy = torch::randn(s.shape).to(type);
      const auto w = torch::rand({s.C}) + 0.5, b = torch::randn({s.C});
      const auto options = ParallelLNOptions(s.C, s.g).centering(centering).layout(s.layout);
      ASSERT_TRUE(detail::uses_fused_kernels(x, options));
      const auto op = [&](const torch::Tensor& xi, const torch::Tensor& wi, const torch::Tensor& bi) {
        return functional::parallel_ln(xi, options, wi, bi);
      };
      // Float32 parameters with the 16-bit input, then parameters of the input's type.
      const Results half = run(op, x, w, b, dy);
      const Results wide = run(op, x.to(torch::kFloat), w, b, dy.to(torch::kFloat));
      EXPECT_TRUE(same_bits(half.y, wide.y.to(type))) << "output";
      EXPECT_TRUE(same_bits(half.dx, wide.dx.to(type))) << "input gradient";
      EXPECT_TRUE(same_bits(half.dweight, wide.dweight)) << "weight gradient";
      EXPECT_TRUE(same_bits(half.dbias, wide.dbias)) << "bias gradient";
      const auto wh = w.to(type), bh = b.to(type);
      const Results both = run(op, x, wh, bh, dy);
      const Results both_wide = run(op, x.to(torch::kFloat), wh.to(torch::kFloat), bh.to(torch::kFloat),
                                    dy.to(torch::kFloat));
      EXPECT_TRUE(same_bits(both.y, both_wide.y.to(type))) << "output, 16-bit parameters";
      EXPECT_TRUE(same_bits(both.dx, both_wide.dx.to(type))) << "input gradient, 16-bit parameters";
      EXPECT_EQ(both.dweight.scalar_type(), type);
    }
  }
}

// The squares the op sums, per group: of the values (PLS) or of the centred values (PLN), in float64.
torch::Tensor group_squares(const torch::Tensor& x, const DtypeCase& s, bool centering) {
  torch::Tensor t = x.to(torch::kDouble);
  if (s.layout == Layout::kNCHW) t = t.permute({0, 2, 3, 1});
  if (s.layout == Layout::kNCL) t = t.permute({0, 2, 1});
  t = t.reshape({-1, s.C / s.g, s.g});
  if (centering) t = t - t.mean(2, true);
  return t.pow(2).sum(2);
}

// Values of magnitude 256 and more, of either sign: every float16 group's sum
// of squares passes 65,504 without centring, and nearly every group's of two
// or more with it. Every op normalises them as it does in float32.
TEST_P(HalfTypes, GroupsWhoseSumOfSquaresOverflowNormalise) {
  const DtypeCase& s = GetParam();
  torch::manual_seed(4);
  const auto r = torch::randn(s.shape);
  const auto x = (r.sign() * (256 + r.abs() * 300)).to(torch::kHalf);
  for (bool centering : {true, false}) {
    SCOPED_TRACE(centering ? "PLN" : "PLS");
    const double overflowing = (group_squares(x, s, centering) > 65504).to(torch::kDouble).mean().item<double>();
    EXPECT_GE(overflowing, centering ? (s.g == 1 ? 0.0 : 0.75) : 1.0);
    const auto options = ParallelLNOptions(s.C, s.g).centering(centering).affine(false).layout(s.layout);
    const auto y = functional::parallel_ln(x, options);
    EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
    EXPECT_TRUE(same_bits(y, functional::parallel_ln(x.to(torch::kFloat), options).to(torch::kHalf)));
    // Within one rounding to float16 of the float64 result (|y| <= sqrt(g) < 32: 2^-6).
    const auto expected = reference(x.to(torch::kDouble), s.C, s.g, s.layout, centering, 1e-5, 2.0);
    EXPECT_LE((y.to(torch::kDouble) - expected).abs().max().item<double>(), 1.6e-2);
    // PQNorm beyond p = q = 2 (the composite formulation, computed in float32).
    const auto pq = PQNormOptions(s.C, s.g).p(3.0).q(3.0).centering(centering).affine(false).layout(s.layout);
    const auto z = functional::pq_norm(x, pq);
    EXPECT_TRUE(torch::isfinite(z).all().item<bool>());
    EXPECT_TRUE(same_bits(z, functional::pq_norm(x.to(torch::kFloat), pq).to(torch::kHalf))) << "pq_norm";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HalfTypes, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return name(info.param); });

// The gated norm: the same two properties, for the gate before and after the
// norm, at a small, mid and large group size.
TEST(HalfTypes, GatedNormIsTheFloatOpRoundedOnce) {
  for (int64_t g : {8, 64, 768}) {
    for (const char* position : {"before", "after"}) {
      for (auto type : {torch::kBFloat16, torch::kHalf}) {
        SCOPED_TRACE(std::to_string(g) + " " + position + " " + c10::toString(type));
        torch::manual_seed(5);
        const auto x = (torch::randn({3, 5, 768}) * 100).to(type), z = torch::randn({3, 5, 768}).to(type);
        const auto dy = torch::randn({3, 5, 768}).to(type);
        const auto w = torch::rand({768}) + 0.5, b = torch::randn({768});
        const auto options = GatedNormOptions(768, g).gate_position(position).centering(g == 64);
        const auto op = [&](const torch::Tensor& zi) {
          return [&, zi](const torch::Tensor& xi, const torch::Tensor& wi, const torch::Tensor& bi) {
            return functional::gated_norm(xi, zi, options, wi, bi);
          };
        };
        const Results half = run(op(z), x, w, b, dy);
        const Results wide = run(op(z.to(torch::kFloat)), x.to(torch::kFloat), w, b, dy.to(torch::kFloat));
        EXPECT_TRUE(same_bits(half.y, wide.y.to(type))) << "output";
        EXPECT_TRUE(same_bits(half.dx, wide.dx.to(type))) << "input gradient";
        EXPECT_TRUE(torch::isfinite(half.y).all().item<bool>());
      }
    }
  }
}

TEST(MixedTypes, ParametersOfANarrowerTypeAreWidened) {
  torch::manual_seed(6);
  const auto x = torch::randn({4, 32});
  const auto w = torch::rand({32}).to(torch::kBFloat16), b = torch::randn({32}).to(torch::kBFloat16);
  const auto options = ParallelLNOptions(32, 8).dim(2);
  const auto y = functional::parallel_ln(x, options, w, b);
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  EXPECT_TRUE(same_bits(y, functional::parallel_ln(x, options, w.to(torch::kFloat), b.to(torch::kFloat))));
}

TEST(MixedTypes, ParametersOfAWiderTypeAreRefused) {
  const auto x = torch::randn({4, 32});
  const auto options = ParallelLNOptions(32, 8).dim(2);
  try {
    functional::parallel_ln(x, options, torch::ones({32}, torch::kDouble));
    ADD_FAILURE() << "a float64 weight with a float32 input was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("weight has dtype Double but the input has dtype Float"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace
}  // namespace pln::test
