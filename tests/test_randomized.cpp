// Randomised shapes, groupings, layouts, memory layouts and dtypes against the
// reference: catches indexing slips that the hand-picked cases might miss.

#include <gtest/gtest.h>

#include "reference.h"

#include <random>

namespace pln::test {
namespace {

TEST(Randomized, ForwardAndGradientsMatchReference) {
  std::mt19937 rng(20261130);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Layout layouts[] = {Layout::kNC, Layout::kNTC, Layout::kNCHW, Layout::kNHWC, Layout::kNCL};
  for (int trial = 0; trial < 150; ++trial) {
    const Layout layout = layouts[pick(0, 4)];
    // Half the groups are multiples of 8, which the vectorised paths take
    // eight at a time; up to 20 groups reach those paths and their tails.
    const int64_t g = pick(0, 1) == 0 ? 8 * pick(1, 3) : pick(1, 12);
    const int64_t C = g * pick(1, 20);
    auto shape = shape_for(layout, pick(0, 4) == 0 ? 0 : pick(1, 3), C, pick(1, 9), pick(1, 70));
    const bool centering = pick(0, 1), affine = pick(0, 1), f64 = pick(0, 1);
    const int memory = pick(0, 2);  // 0 contiguous, 1 channels-last (NCHW), 2 transposed storage
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " layout " << to_string(layout)
                                      << " C " << C << " g " << g << " shape "
                                      << c10::IntArrayRef(shape) << " centering " << centering
                                      << " affine " << affine << " f64 " << f64 << " memory " << memory);
    torch::manual_seed(trial);
    const auto opts = torch::TensorOptions().dtype(f64 ? torch::kDouble : torch::kFloat);
    torch::Tensor x0 = torch::randn(shape, opts) * 3 - 1;
    if (memory == 1 && layout == Layout::kNCHW) {
      x0 = x0.contiguous(torch::MemoryFormat::ChannelsLast);
    } else if (memory == 2) {
      // Same logical tensor, stored with the first two axes swapped.
      x0 = x0.transpose(0, 1).contiguous().transpose(0, 1);
    }
    torch::Tensor w, b;
    if (affine) {
      w = (torch::rand({C}, opts) + 0.5).requires_grad_();
      b = torch::randn({C}, opts).requires_grad_();
    }
    const auto options = ParallelLNOptions(C, g).centering(centering).affine(affine).layout(layout);
    const torch::Tensor x = x0.detach().requires_grad_();
    const torch::Tensor y = functional::parallel_ln(x, options, w, b);
    const torch::Tensor xr = x0.detach().to(torch::kDouble).requires_grad_();
    const torch::Tensor wr = affine ? w.detach().to(torch::kDouble).requires_grad_() : torch::Tensor();
    const torch::Tensor br = affine ? b.detach().to(torch::kDouble).requires_grad_() : torch::Tensor();
    const torch::Tensor yr = reference(xr, C, g, layout, centering, 1e-5, 2.0, wr, br);
    const double tol = f64 ? 1e-9 : 5e-4;
    ASSERT_TRUE(torch::allclose(y.to(torch::kDouble), yr, tol, tol));
    if (x.numel() == 0) continue;
    const torch::Tensor dy = torch::randn(shape, opts);
    y.backward(dy);
    yr.backward(dy.to(torch::kDouble));
    ASSERT_TRUE(torch::allclose(x.grad().to(torch::kDouble), xr.grad(), 10 * tol, 10 * tol));
    if (affine) {
      ASSERT_TRUE(torch::allclose(w.grad().to(torch::kDouble), wr.grad(), 20 * tol, 20 * tol));
      ASSERT_TRUE(torch::allclose(b.grad().to(torch::kDouble), br.grad(), 20 * tol, 20 * tol));
    }
  }
}

}  // namespace
}  // namespace pln::test
