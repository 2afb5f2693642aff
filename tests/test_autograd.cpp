// Finite-difference gradcheck and gradgradcheck in float64 for every option
// combination and layout, through the fused autograd function.

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "reference.h"

namespace pln::test {
namespace {

// One test per layout; the option combinations loop inside it.
class Gradcheck : public ::testing::TestWithParam<Layout> {
 protected:
  template <typename Check>
  void for_each_option(Check&& check) {
    const Layout layout = GetParam();
    for (bool centering : {true, false})
      for (bool affine : {true, false}) {
        SCOPED_TRACE(std::string(centering ? "PLN" : "PLS") + (affine ? ", affine" : ", no affine"));
        torch::manual_seed(21);
        const auto opts = torch::TensorOptions().dtype(torch::kDouble);
        const auto x = torch::randn(shape_for(layout, 2, 8, 3, 2), opts).requires_grad_();
        torch::Tensor w, b;
        if (affine) {
          w = (torch::rand({8}, opts) + 0.5).requires_grad_();
          b = torch::randn({8}, opts).requires_grad_();
        }
        const auto options =
            ParallelLNOptions(8, 4).centering(centering).affine(affine).layout(layout);
        ASSERT_TRUE(detail::uses_fused_kernels(x, options));
        const Fn op = [&](const std::vector<torch::Tensor>& in) {
          return functional::parallel_ln(in[0], options, in[1], in[2]);
        };
        const CheckResult r = check(op, std::vector<torch::Tensor>{x, w, b});
        EXPECT_TRUE(r.ok) << r.message;
      }
  }
};

TEST_P(Gradcheck, FirstOrder) {
  for_each_option([](const Fn& f, const std::vector<torch::Tensor>& in) { return gradcheck(f, in); });
}

TEST_P(Gradcheck, SecondOrder) {
  for_each_option([](const Fn& f, const std::vector<torch::Tensor>& in) { return gradgradcheck(f, in); });
}

INSTANTIATE_TEST_SUITE_P(AllOptions, Gradcheck,
                         ::testing::Values(Layout::kNC, Layout::kNTC, Layout::kNCHW,
                                           Layout::kNHWC, Layout::kNCL),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           return to_string(info.param);
                         });

TEST(Gradcheck, ChannelsLastInput) {
  torch::manual_seed(22);
  const auto x = torch::randn({2, 8, 3, 2}, torch::kDouble)
                     .contiguous(torch::MemoryFormat::ChannelsLast)
                     .requires_grad_();
  const auto w = (torch::rand({8}, torch::kDouble) + 0.5).requires_grad_();
  const auto options = ParallelLNOptions(8, 2);
  const Fn f = [&](const std::vector<torch::Tensor>& in) {
    return functional::parallel_ln(in[0], options, in[1]);
  };
  auto r = gradcheck(f, {x, w});
  EXPECT_TRUE(r.ok) << r.message;
  r = gradgradcheck(f, {x, w});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Gradcheck, PQNormComposite) {
  torch::manual_seed(23);
  const auto x = torch::randn({3, 8}, torch::kDouble).requires_grad_();
  const auto options = PQNormOptions(8, 4).p(3.0).q(2.5).dim(2).affine(false);
  const Fn f = [&](const std::vector<torch::Tensor>& in) {
    return functional::pq_norm(in[0], options);
  };
  const auto r = gradcheck(f, {x});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(SecondDerivative, InputDerivativeOfAPinnLikeNetwork) {
  // u(t) = Linear(PLN(Linear(t))): d2u/dt2 through the fused op equals the
  // composite path's, which autograd differentiates natively.
  torch::manual_seed(24);
  auto net = torch::nn::Sequential(torch::nn::Linear(1, 16),
                                   pln::ParallelLN(ParallelLNOptions(16, 4).dim(2).affine(false)),
                                   torch::nn::Linear(16, 1));
  net->to(torch::kDouble);
  const auto t = torch::linspace(-1, 1, 9, torch::kDouble).unsqueeze(1).requires_grad_();
  auto second = [&](bool fused) {
    torch::Tensor h = net[0]->as<torch::nn::Linear>()->forward(t);
    const auto options = ParallelLNOptions(16, 4).dim(2).affine(false);
    h = fused ? functional::parallel_ln(h, options) : detail::parallel_ln_composite(h, options);
    const auto u = net[2]->as<torch::nn::Linear>()->forward(h);
    const auto du = torch::autograd::grad({u.sum()}, {t}, {}, true, true)[0];
    return torch::autograd::grad({du.sum()}, {t}, {}, true, true)[0];
  };
  const auto fused = second(true), composite = second(false);
  EXPECT_GT(composite.abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(torch::allclose(fused, composite, 1e-10, 1e-10));
}

TEST(SecondDerivative, GradientGraphKeepsItsDigitsAtACommonOffset) {
  // A gradient taken with create_graph runs the composite formulas; in float32
  // at offset 1e4 they must centre as the fused kernels do (shift, then
  // mean), or the centred values are off by the mean's rounding and dx, which
  // multiplies them by rstd twice, loses three to four digits.
  torch::manual_seed(26);
  const auto x64 = torch::randn({64, 16}, torch::kDouble) * 2 + 1e4;
  const auto dy64 = torch::randn({64, 16}, torch::kDouble);
  const auto options = ParallelLNOptions(16, 2).dim(2).affine(false);
  // The reference sees the float32 inputs exactly.
  const auto x32 = x64.to(torch::kFloat).to(torch::kDouble).requires_grad_();
  const auto y32 = functional::parallel_ln(x32, options);
  const auto reference = torch::autograd::grad({y32}, {x32}, {dy64}, true, false)[0];
  const double scale = reference.abs().max().item<double>();
  for (bool create_graph : {false, true}) {
    SCOPED_TRACE(create_graph ? "create_graph" : "first order");
    const auto x = x64.to(torch::kFloat).requires_grad_();
    const auto y = functional::parallel_ln(x, options);
    const auto got = torch::autograd::grad({y}, {x}, {dy64.to(torch::kFloat)}, true, create_graph)[0];
    EXPECT_LT((got.to(torch::kDouble) - reference).abs().max().item<double>(), 1e-5 * scale);
  }
}

// Passes its input through and gives back no gradient (an undefined tensor),
// as autograd functions may for an input that does not matter.
struct NoGradientBack : torch::autograd::Function<NoGradientBack> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& y) { return y.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    return {torch::Tensor()};
  }
};

TEST(Backward, AnUndefinedOutputGradientGivesNoGradients) {
  // The fused function does not have autograd fill in zero gradients for the
  // output or its statistics, so it must take an undefined one itself.
  torch::manual_seed(25);
  const auto x = torch::randn({4, 16}).requires_grad_();
  const auto w = (torch::rand({16}) + 0.5).requires_grad_();
  const auto options = ParallelLNOptions(16, 4).dim(2);
  ASSERT_TRUE(detail::uses_fused_kernels(x, options));
  const auto y = functional::parallel_ln(x, options, w);
  ASSERT_NO_THROW(NoGradientBack::apply(y).sum().backward());
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // and a defined one still reaches the input
  functional::parallel_ln(x, options, w).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(torch::isfinite(x.grad()).all().item<bool>());
}

}  // namespace
}  // namespace pln::test
