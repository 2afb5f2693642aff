// Forward values and first-order gradients of the fused kernels against the
// independent reference, over layouts, group sizes, options and dtypes.

#include <gtest/gtest.h>

#include "reference.h"


namespace pln::test {
namespace {

struct Case {
  Layout layout;
  int64_t C;
  int64_t g;
  std::vector<int64_t> shape;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  // Small odd shapes with every grouping of 12 features, in every layout.
  for (Layout layout : {Layout::kNC, Layout::kNTC, Layout::kNCHW, Layout::kNHWC, Layout::kNCL})
    for (int64_t g : {1, 2, 3, 4, 12}) out.push_back({layout, 12, g, shape_for(layout, 3, 12, 5, 7)});
  // Sizes that reach the vectorised paths and their tails: eight or more
  // groups of 8 or 16 features, inner planes longer than one chunk and not a
  // multiple of the vector width.
  out.push_back({Layout::kNC, 64, 8, {5, 64}});
  out.push_back({Layout::kNHWC, 36, 4, {2, 3, 2, 36}});  // nine groups of 4: the double path and a tail
  out.push_back({Layout::kNC, 136, 8, {3, 136}});  // 17 groups: one block of 8 twice, one left
  // 25 groups of 8: an AVX-512 block of 16, an AVX2 block of 8 and one left
  out.push_back({Layout::kNC, 200, 8, {3, 200}});
  out.push_back({Layout::kNTC, 256, 8, {2, 3, 256}});  // two AVX-512 blocks
  out.push_back({Layout::kNC, 384, 8, {7, 384}});  // 21 blocks in one pipeline, weights every 3
  out.push_back({Layout::kNC, 136, 4, {3, 136}});  // 34 groups of 4: float quads of 8 groups and a tail
  out.push_back({Layout::kNTC, 64, 4, {2, 3, 64}});
  out.push_back({Layout::kNTC, 128, 16, {2, 3, 128}});
  out.push_back({Layout::kNC, 96, 32, {4, 96}});
  out.push_back({Layout::kNC, 256, 32, {3, 256}});  // eight groups of 32
  out.push_back({Layout::kNC, 640, 40, {2, 640}});
  out.push_back({Layout::kNCHW, 32, 16, {2, 32, 23, 25}});  // 575 positions > one chunk
  out.push_back({Layout::kNCHW, 16, 8, {2, 16, 4, 4}});
  out.push_back({Layout::kNCL, 24, 6, {2, 24, 1029}});
  return out;
}

std::string name(const Case& c) {
  std::string s = to_string(c.layout) + "_C" + std::to_string(c.C) + "_g" + std::to_string(c.g);
  for (auto d : c.shape) s += "_" + std::to_string(d);
  return s;
}

void PrintTo(const Case& c, std::ostream* os) { *os << name(c); }
// One test per shape; options and dtypes loop inside it (fewer processes under CTest).
class Parity : public ::testing::TestWithParam<Case> {};

void check_parity(const Case& c, bool centering, bool affine, torch::Dtype dtype) {
  torch::manual_seed(1);
  const auto opts = torch::TensorOptions().dtype(dtype);
  const torch::Tensor x0 = torch::randn(c.shape, opts) * 2 + 0.5;
  torch::Tensor w, b;
  if (affine) {
    w = (torch::rand({c.C}, opts) + 0.5).requires_grad_();
    b = torch::randn({c.C}, opts).requires_grad_();
  }
  const auto options =
      ParallelLNOptions(c.C, c.g).centering(centering).affine(affine).layout(c.layout);
  ASSERT_TRUE(detail::uses_fused_kernels(x0, options));

  const torch::Tensor x = x0.clone().requires_grad_();
  const torch::Tensor y = functional::parallel_ln(x, options, w, b);
  const torch::Tensor xr = x0.to(torch::kDouble).requires_grad_();
  const torch::Tensor wr = affine ? w.detach().to(torch::kDouble).requires_grad_() : torch::Tensor();
  const torch::Tensor br = affine ? b.detach().to(torch::kDouble).requires_grad_() : torch::Tensor();
  const torch::Tensor yr = reference(xr, c.C, c.g, c.layout, centering, 1e-5, 2.0, wr, br);

  const double tol = dtype == torch::kFloat ? 2e-4 : 1e-10;
  ASSERT_EQ(y.sizes(), x.sizes());
  EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), yr, tol, tol))
      << "max |diff| " << (y.to(torch::kDouble) - yr).abs().max().item<double>();

  const torch::Tensor dy = torch::randn(c.shape, opts);
  y.backward(dy);
  yr.backward(dy.to(torch::kDouble));
  EXPECT_TRUE(torch::allclose(x.grad().to(torch::kDouble), xr.grad(), 10 * tol, 10 * tol))
      << "dx max |diff| " << (x.grad().to(torch::kDouble) - xr.grad()).abs().max().item<double>();
  if (affine) {
    EXPECT_TRUE(torch::allclose(w.grad().to(torch::kDouble), wr.grad(), 10 * tol, 10 * tol))
        << "dweight max |diff| " << (w.grad().to(torch::kDouble) - wr.grad()).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(b.grad().to(torch::kDouble), br.grad(), 10 * tol, 10 * tol))
        << "dbias max |diff| " << (b.grad().to(torch::kDouble) - br.grad()).abs().max().item<double>();
  }
}

TEST_P(Parity, ForwardAndGradientsMatchReference) {
  for (bool centering : {true, false})
    for (bool affine : {true, false})
      for (torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
        SCOPED_TRACE(std::string(centering ? "PLN" : "PLS") + (affine ? ", affine" : ", no affine") +
                     (dtype == torch::kFloat ? ", float32" : ", float64"));
        check_parity(GetParam(), centering, affine, dtype);
      }
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, Parity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return name(info.param); });

// Accuracy at a common offset much larger than the spread: x = a + 0.1 * randn.
// PLN (with centering) does not depend on a, and in float64 the reference
// input x - a is exact (x and a are within a factor of two), so the reference
// is the operator of well-conditioned values. Each error is relative to the
// largest reference value, and must stay at a small multiple of the input
// dtype's rounding whatever the offset.
std::vector<Case> offset_cases() {
  return {
      {Layout::kNC, 64, 8, {512, 64}},      // eight groups of 8: AVX2 groups
      {Layout::kNC, 200, 8, {64, 200}},     // AVX-512 octets, AVX2 groups, scalar tail
      {Layout::kNTC, 384, 8, {3, 5, 384}},  // rows of whole octet blocks: one pipeline through them
      {Layout::kNC, 136, 4, {64, 136}},     // float quads and a tail
      {Layout::kNTC, 128, 16, {4, 16, 128}},
      {Layout::kNC, 256, 32, {32, 256}},
      {Layout::kNC, 200, 40, {32, 200}},    // run-time group length
      {Layout::kNC, 48, 3, {64, 48}},       // scalar groups
      {Layout::kNHWC, 32, 8, {2, 5, 5, 32}},
      {Layout::kNCHW, 16, 8, {2, 16, 23, 25}},  // more positions than one chunk, odd tail
      {Layout::kNCHW, 12, 4, {3, 12, 7, 9}},
      {Layout::kNCL, 24, 6, {2, 24, 601}},
  };
}

class OffsetParity : public ::testing::TestWithParam<Case> {};

TEST_P(OffsetParity, ErrorDoesNotGrowWithTheOffset) {
  const Case& c = GetParam();
  for (torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
    // float32: a few units of 2^-24 on each centred value and on the sums of
    // the backward; float64 likewise at 2^-53.
    const double tol = dtype == torch::kFloat ? 4e-6 : 1e-14;
    for (double a : {0.0, 1.0, 1e2, 1e4, 1e6}) {
      SCOPED_TRACE(std::string(dtype == torch::kFloat ? "float32" : "float64") + ", offset " + std::to_string(a));
      torch::manual_seed(13);
      const auto opts = torch::TensorOptions().dtype(dtype);
      const torch::Tensor x0 = a + 0.1 * torch::randn(c.shape, opts);
      const torch::Tensor w = (torch::rand({c.C}, opts) + 0.5).requires_grad_();
      const torch::Tensor b = torch::randn({c.C}, opts).requires_grad_();
      const torch::Tensor dy = torch::randn(c.shape, opts);
      const auto options = ParallelLNOptions(c.C, c.g).layout(c.layout);
      ASSERT_TRUE(detail::uses_fused_kernels(x0, options));

      const torch::Tensor x = x0.clone().requires_grad_();
      const torch::Tensor y = functional::parallel_ln(x, options, w, b);
      y.backward(dy);
      const torch::Tensor xr = (x0.to(torch::kDouble) - a).requires_grad_();
      const torch::Tensor wr = w.detach().to(torch::kDouble).requires_grad_();
      const torch::Tensor br = b.detach().to(torch::kDouble).requires_grad_();
      const torch::Tensor yr = reference(xr, c.C, c.g, c.layout, true, 1e-5, 2.0, wr, br);
      yr.backward(dy.to(torch::kDouble));

      EXPECT_LT(relative_error(y, yr), tol) << "output";
      EXPECT_LT(relative_error(x.grad(), xr.grad()), tol) << "dx";
      EXPECT_LT(relative_error(w.grad(), wr.grad()), tol) << "dweight";
      EXPECT_LT(relative_error(b.grad(), br.grad()), tol) << "dbias";
      // The forward without saved statistics (no gradient wanted) takes its own kernels.
      torch::NoGradGuard no_grad;
      EXPECT_LT(relative_error(functional::parallel_ln(x0, options, w, b), yr), tol) << "inference output";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Offsets, OffsetParity, ::testing::ValuesIn(offset_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return name(info.param); });

TEST(Forward, MatchesScalarLoops) {
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({2, 12, 3, 5}, torch::kDouble);
  for (bool centering : {true, false}) {
    const auto y = functional::parallel_ln(
        x, ParallelLNOptions(12, 4).centering(centering).affine(false).dim(4));
    EXPECT_TRUE(torch::allclose(y, reference_loops_nchw(x, 4, centering, 1e-5), 1e-12, 1e-12));
  }
}

TEST(Forward, GroupStatisticsAreNormalised) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({4, 32, 6, 6}) * 3 + 1;
  for (bool centering : {true, false}) {
    const auto y = functional::parallel_ln(
        x, ParallelLNOptions(32, 8).centering(centering).affine(false).eps(0.0));
    const auto grouped = y.permute({0, 2, 3, 1}).reshape({-1, 4, 8});
    if (centering) {
      EXPECT_LT(grouped.mean(2).abs().max().item<float>(), 1e-5);
    }
    EXPECT_LT((grouped.pow(2).mean(2) - 1).abs().max().item<float>(), 1e-4);
  }
}

TEST(Forward, SavingTheStatisticsDoesNotChangeTheOutput) {
  // A forward that will be differentiated writes mean and 1/std; one that
  // will not takes kernels that do not. Both must give the same bits, in
  // every features-last float kernel and in rows of whole AVX-512 blocks.
  torch::manual_seed(14);
  for (const Case& c : std::vector<Case>{{Layout::kNC, 200, 8, {9, 200}},
                                         {Layout::kNC, 384, 8, {9, 384}},
                                         {Layout::kNTC, 128, 8, {3, 4, 128}},
                                         {Layout::kNC, 136, 4, {9, 136}},
                                         {Layout::kNCHW, 16, 8, {2, 16, 23, 25}}}) {
    SCOPED_TRACE(name(c));
    const torch::Tensor x = torch::randn(c.shape) * 3 + 20;
    const torch::Tensor w = torch::rand({c.C}) + 0.5, b = torch::randn({c.C});
    const auto options = ParallelLNOptions(c.C, c.g).layout(c.layout);
    const torch::Tensor trained = functional::parallel_ln(x.clone().requires_grad_(), options, w, b);
    torch::NoGradGuard no_grad;
    const torch::Tensor inferred = functional::parallel_ln(x, options, w, b);
    EXPECT_TRUE(torch::equal(trained.detach(), inferred))
        << "max |diff| " << (trained.detach() - inferred).abs().max().item<float>();
  }
}

TEST(Forward, LargeOffsetKeepsPrecision) {
  // Values around 1000 with unit spread: naive E[x^2] - E[x]^2 in float loses everything.
  torch::manual_seed(4);
  // 25 groups of 8 per row: every features-last float kernel (AVX-512, AVX2, scalar).
  const torch::Tensor x = torch::randn({64, 200}) + 1000;
  const auto options = ParallelLNOptions(200, 8).affine(false).dim(2);
  const auto y = functional::parallel_ln(x, options);
  const auto yr = reference(x.to(torch::kDouble), 200, 8, Layout::kNC, true, 1e-5, 2.0);
  EXPECT_LT((y.to(torch::kDouble) - yr).abs().max().item<double>(), 2e-3);
  const torch::Tensor xn = torch::randn({2, 64, 40, 1}) + 1000;
  const auto yn = functional::parallel_ln(xn, ParallelLNOptions(64, 8).affine(false).dim(4));
  const auto ynr = reference(xn.to(torch::kDouble), 64, 8, Layout::kNCHW, true, 1e-5, 2.0);
  EXPECT_LT((yn.to(torch::kDouble) - ynr).abs().max().item<double>(), 2e-3);
}

TEST(Forward, LargeNchwOutputMatchesReference) {
  // From 8 MiB on the NCHW kernels write y and dx with non-temporal stores.
  torch::manual_seed(12);
  const torch::Tensor x = torch::randn({2, 32, 256, 260}).requires_grad_();
  ASSERT_GE(x.numel() * 4, 8 << 20);
  const auto w = torch::rand({32}) + 0.5, b = torch::randn({32});
  const auto y = functional::parallel_ln(x, ParallelLNOptions(32, 8), w, b);
  const auto xr = x.detach().clone().requires_grad_();
  const auto yr = reference(xr, 32, 8, Layout::kNCHW, true, 1e-5, 2.0, w, b);
  EXPECT_LT((y - yr).abs().max().item<float>(), 1e-4);
  const auto dy = torch::randn_like(yr);
  y.backward(dy);
  yr.backward(dy);
  EXPECT_LT((x.grad() - xr.grad()).abs().max().item<float>(), 1e-3);
}

TEST(Forward, LargeFeaturesLastOutputMatchesReference) {
  // From 8 MiB on the AVX2 features-last kernels write y with non-temporal
  // stores: groups of 8 and 16 (one or more whole registers) and of 4 (float:
  // half a register), with and without saved statistics, at a common offset.
  torch::manual_seed(13);
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    const int64_t C = 512, rows = (int64_t(9) << 20) / (C * torch::elementSize(dtype));
    const auto x0 = torch::randn({rows, C}, torch::TensorOptions().dtype(dtype)) + 100;
    const auto w = torch::rand({C}, x0.options()) + 0.5, b = torch::randn({C}, x0.options());
    const double tol = dtype == torch::kFloat ? 1e-4 : 1e-10;
    for (const int64_t g : {8, 16, 4}) {
      SCOPED_TRACE(::testing::Message() << "dtype " << dtype << ", g " << g);
      const auto options = ParallelLNOptions(C, g).dim(2);
      const auto xr = x0.to(torch::kDouble).clone().requires_grad_();  // not x0 itself for double
      const auto yr = reference(xr, C, g, Layout::kNC, true, 1e-5, 2.0, w.to(torch::kDouble), b.to(torch::kDouble));
      {
        torch::NoGradGuard no_grad;
        const auto y = functional::parallel_ln(x0, options, w, b);
        EXPECT_LT((y.to(torch::kDouble) - yr).abs().max().item<double>(), tol);
      }
      const auto x = x0.clone().requires_grad_();
      const auto y = functional::parallel_ln(x, options, w, b);
      EXPECT_LT((y.to(torch::kDouble) - yr).abs().max().item<double>(), tol);
      const auto dy = torch::randn_like(x0);
      y.backward(dy);
      yr.backward(dy.to(torch::kDouble));
      EXPECT_LT((x.grad().to(torch::kDouble) - xr.grad()).abs().max().item<double>(), 10 * tol);
    }
  }
}

TEST(Backward, LargeFeaturesLastGradientIsRowwiseBitForBit) {
  // From 8 MiB on the AVX-512 backward of float groups of 8 writes dx around
  // the cache and prefetches x and dy, on CPUs where that is faster and
  // wherever PLN_CPU_STREAM_BACKWARD=1 (ctest's library_tests_streamed_backward
  // runs this test so): each row's dx is still the bits a
  // small call (stored through the cache) gives for that row alone, with
  // rows of whole blocks of sixteen groups (C = 512, 384) and with two groups
  // left to the scalar kernel (C = 144; rows stay 64-byte aligned).
  torch::manual_seed(14);
  for (const int64_t C : {512, 384, 144}) {
    SCOPED_TRACE(::testing::Message() << "C " << C);
    const int64_t rows = (int64_t(9) << 20) / (C * 4);
    const auto x0 = torch::randn({rows, C}) + 100;
    const auto w = torch::rand({C}) + 0.5, b = torch::randn({C});
    const auto dy = torch::randn_like(x0);
    const auto options = ParallelLNOptions(C, 8).dim(2);
    const auto x = x0.clone().requires_grad_();
    functional::parallel_ln(x, options, w, b).backward(dy);
    for (const int64_t r0 : {int64_t(0), rows / 2, rows - 40}) {
      const auto xs = x0.slice(0, r0, r0 + 40).clone().requires_grad_();
      functional::parallel_ln(xs, options, w, b).backward(dy.slice(0, r0, r0 + 40).contiguous());
      EXPECT_TRUE(torch::equal(x.grad().slice(0, r0, r0 + 40), xs.grad())) << "rows from " << r0;
    }
  }
}

TEST(Forward, VeryLargeFeaturesLastOutputIsRowwiseBitForBit) {
  // From 64 MiB on the AVX-512 forward of float groups of 8 writes y around
  // the cache: every row is still the bits calls on 4 MiB of rows give (those
  // store through the cache), without and with saved statistics, and so are
  // the statistics, through the backward that reads them.
  torch::manual_seed(15);
  for (const int64_t C : {512, 384}) {
    SCOPED_TRACE(::testing::Message() << "C " << C);
    const int64_t rows = (int64_t(65) << 20) / (C * 4), chunk = (int64_t(4) << 20) / (C * 4);
    const auto x0 = torch::randn({rows, C}) + 100;
    const auto w = torch::rand({C}) + 0.5, b = torch::randn({C});
    const auto options = ParallelLNOptions(C, 8).dim(2);
    torch::Tensor y_no_grad;
    {
      torch::NoGradGuard no_grad;
      y_no_grad = functional::parallel_ln(x0, options, w, b);
    }
    const auto x = x0.clone().requires_grad_();
    const auto y = functional::parallel_ln(x, options, w, b);
    const auto dy = torch::randn_like(x0);
    y.backward(dy);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t n = std::min(chunk, rows - r0);
      const auto xs = x0.slice(0, r0, r0 + n).clone().requires_grad_();
      const auto ys = functional::parallel_ln(xs, options, w, b);
      ASSERT_TRUE(torch::equal(y_no_grad.slice(0, r0, r0 + n), ys)) << "rows from " << r0;
      ASSERT_TRUE(torch::equal(y.slice(0, r0, r0 + n), ys)) << "rows from " << r0;
      if (r0 == 0 || r0 + n == rows) {
        ys.backward(dy.slice(0, r0, r0 + n).contiguous());
        EXPECT_TRUE(torch::equal(x.grad().slice(0, r0, r0 + n), xs.grad())) << "rows from " << r0;
      }
    }
  }
}

TEST(Forward, MidSizeGroupsAreRowwiseBitForBit) {
  // Features-last groups of up to 16 registers go through the forward a
  // batch of groups at a time (large_groups.h), the batches running from one
  // row into the next, the task's last groups one at a time: a group's bits
  // are the same either way, so every row of a call is the bits of that row
  // alone (whose few groups take no batch), and the thread count changes
  // nothing; the backward's batches stay within a row, so its rows are too.
  // Groups of whole registers and with a tail, rows of a number of groups no
  // batch divides; PLN and PLS; float32 and bfloat16.
  struct Shape {
    int64_t channels, group;
  };
  const int saved = torch::get_num_threads();
  for (const Shape shape : {Shape{768, 64}, Shape{240, 48}, Shape{300, 100}, Shape{768, 256}, Shape{160, 32}}) {
    for (bool centering : {true, false}) {
      for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
        SCOPED_TRACE(::testing::Message() << "C " << shape.channels << " g " << shape.group
                                          << (centering ? " PLN " : " PLS ") << dtype);
        torch::manual_seed(16);
        const int64_t rows = 37;
        const auto x0 = (torch::randn({rows, shape.channels}) * 2 + 5).to(dtype);
        const auto dy = torch::randn({rows, shape.channels}).to(dtype);
        const auto w = torch::rand({shape.channels}) + 0.5, b = torch::randn({shape.channels});
        const auto options = ParallelLNOptions(shape.channels, shape.group).dim(2).centering(centering);
        std::vector<torch::Tensor> ys, dxs;
        for (int threads : {1, 2}) {
          torch::set_num_threads(threads);
          const auto x = x0.clone().requires_grad_();
          const auto y = functional::parallel_ln(x, options, w, b);
          y.backward(dy);
          ys.push_back(y.detach());
          dxs.push_back(x.grad());
        }
        torch::set_num_threads(saved);
        EXPECT_TRUE(torch::equal(ys[0], ys[1]));
        EXPECT_TRUE(torch::equal(dxs[0], dxs[1]));
        for (int64_t r = 0; r < rows; ++r) {
          const auto xr = x0.slice(0, r, r + 1).clone().requires_grad_();
          const auto yr = functional::parallel_ln(xr, options, w, b);
          yr.backward(dy.slice(0, r, r + 1).contiguous());
          ASSERT_TRUE(torch::equal(ys[0].slice(0, r, r + 1), yr.detach())) << "row " << r;
          ASSERT_TRUE(torch::equal(dxs[0].slice(0, r, r + 1), xr.grad())) << "row " << r;
        }
      }
    }
  }
}

TEST(Forward, GroupOfAllFeaturesIsLayerNorm) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({7, 3, 20});
  const auto y = functional::parallel_ln(x, ParallelLNOptions(20, 20).affine(false).dim(3));
  EXPECT_TRUE(torch::allclose(y, torch::layer_norm(x, {20}), 1e-5, 1e-5));
}

TEST(Layouts, ChannelsLastMemoryIsNormalisedInPlaceOfAPermute) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({2, 16, 5, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  ASSERT_FALSE(x.is_contiguous());
  const auto w = torch::rand({16}) + 0.5, b = torch::randn({16});
  const auto xg = x.clone().requires_grad_();
  const auto y = functional::parallel_ln(xg, ParallelLNOptions(16, 4).dim(4), w, b);
  EXPECT_TRUE(y.is_contiguous(torch::MemoryFormat::ChannelsLast));
  const auto yr = reference(x.contiguous(), 16, 4, Layout::kNCHW, true, 1e-5, 2.0, w, b);
  EXPECT_TRUE(torch::allclose(y, yr, 1e-5, 1e-5));
  // A contiguous upstream gradient into a channels-last forward.
  const auto dy = torch::randn({2, 16, 5, 3});
  y.backward(dy);
  const auto xr = x.contiguous().requires_grad_();
  reference(xr, 16, 4, Layout::kNCHW, true, 1e-5, 2.0, w, b).backward(dy);
  EXPECT_TRUE(torch::allclose(xg.grad(), xr.grad(), 1e-4, 1e-4));
}

TEST(Layouts, NonContiguousInput) {
  torch::manual_seed(7);
  const torch::Tensor base = torch::randn({24, 6});
  const torch::Tensor x = base.t();  // [6, 24], strides (1, 6)
  ASSERT_FALSE(x.is_contiguous());
  const auto y = functional::parallel_ln(x, ParallelLNOptions(24, 6).dim(2).affine(false));
  EXPECT_TRUE(torch::allclose(y, reference(x, 24, 6, Layout::kNC, true, 1e-5, 2.0), 1e-5, 1e-5));
  const torch::Tensor sliced = torch::randn({3, 16, 9, 9}).slice(2, 0, 9, 2);  // strided H
  const auto ys = functional::parallel_ln(sliced, ParallelLNOptions(16, 8).dim(4).affine(false));
  EXPECT_TRUE(torch::allclose(ys, reference(sliced, 16, 8, Layout::kNCHW, true, 1e-5, 2.0), 1e-5, 1e-5));
}

TEST(Layouts, DeclaredNotGuessed) {
  // Width equals channel count: the declared layout alone decides the grouping axis.
  torch::manual_seed(8);
  const torch::Tensor x = torch::randn({2, 8, 8, 8});
  const auto nchw = functional::parallel_ln(x, ParallelLNOptions(8, 4).dim(4).affine(false));
  const auto nhwc = functional::parallel_ln(
      x, ParallelLNOptions(8, 4).layout(Layout::kNHWC).affine(false));
  EXPECT_TRUE(torch::allclose(nchw, reference(x, 8, 4, Layout::kNCHW, true, 1e-5, 2.0), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(nhwc, reference(x, 8, 4, Layout::kNHWC, true, 1e-5, 2.0), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(nchw, nhwc, 1e-3, 1e-3));
}

TEST(Shapes, EmptyBatch) {
  for (Layout layout : {Layout::kNC, Layout::kNTC, Layout::kNCHW, Layout::kNHWC, Layout::kNCL}) {
    const torch::Tensor x = torch::randn(shape_for(layout, 0, 8, 3, 2)).requires_grad_();
    const auto options = ParallelLNOptions(8, 4).layout(layout);
    pln::ParallelLN norm(options);
    const auto y = norm(x);
    EXPECT_EQ(y.sizes(), x.sizes());
    y.sum().backward();
    EXPECT_EQ(x.grad().sizes(), x.sizes());
    EXPECT_EQ(norm->weight.grad().abs().sum().item<float>(), 0.f);
  }
}

TEST(Paths, CompositeMatchesFused) {
  torch::manual_seed(9);
  const torch::Tensor x = torch::randn({3, 16, 4, 5}, torch::kDouble);
  const auto w = torch::rand({16}, torch::kDouble), b = torch::randn({16}, torch::kDouble);
  for (bool centering : {true, false}) {
    const auto options = ParallelLNOptions(16, 4).centering(centering);
    EXPECT_TRUE(torch::allclose(functional::parallel_ln(x, options, w, b),
                                detail::parallel_ln_composite(x, options, w, b), 1e-12, 1e-12));
  }
}

TEST(Paths, GenericPTakesTheCompositePathAndHalfTypesTheFused) {
  torch::manual_seed(10);
  const torch::Tensor x = torch::randn({5, 12}, torch::kDouble);
  const auto options = ParallelLNOptions(12, 4).dim(2).p(3.0).affine(false);
  EXPECT_FALSE(detail::uses_fused_kernels(x, options));
  EXPECT_TRUE(torch::allclose(functional::parallel_ln(x, options),
                              reference(x, 12, 4, Layout::kNC, true, 1e-5, 3.0), 1e-12, 1e-12));
  const torch::Tensor xh = torch::randn({5, 12}).to(torch::kBFloat16);
  const auto options2 = ParallelLNOptions(12, 4).dim(2).affine(false);
  EXPECT_TRUE(detail::uses_fused_kernels(xh, options2));
  const auto yh = functional::parallel_ln(xh, options2).to(torch::kFloat);
  EXPECT_TRUE(torch::allclose(yh, reference(xh.to(torch::kFloat), 12, 4, Layout::kNC, true, 1e-5, 2.0), 5e-2, 5e-2));
}

TEST(Paths, NonCpuTensorsTakeTheCompositePath) {
  // No accelerator here: the meta device stands in for one (shapes, dtypes and
  // devices propagate through the composite ops without data).
  const auto x = torch::empty({2, 16, 3, 3}, torch::TensorOptions().device(torch::kMeta));
  const auto w = torch::empty({16}, torch::TensorOptions().device(torch::kMeta));
  const auto options = ParallelLNOptions(16, 4);
  EXPECT_FALSE(detail::uses_fused_kernels(x, options));
  const auto y = functional::parallel_ln(x, options, w, w);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes(), x.sizes());
  try {
    functional::parallel_ln(x, options, torch::ones({16}));
    ADD_FAILURE() << "a CPU weight with a meta input was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("weight is on cpu but the input is on meta"),
              std::string::npos) << e.what_without_backtrace();
  }
}

TEST(Threads, ResultsDoNotDependOnThreadCount) {
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({64, 256}).requires_grad_();
  const auto dy = torch::randn({64, 256});
  pln::ParallelLN norm(ParallelLNOptions(256, 8).dim(2));
  const int saved = torch::get_num_threads();
  std::vector<torch::Tensor> ys, dws;
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    norm->zero_grad();
    const auto y = norm(x);
    y.backward(dy);
    ys.push_back(y.detach());
    dws.push_back(norm->weight.grad().clone());
  }
  torch::set_num_threads(saved);
  EXPECT_TRUE(torch::equal(ys[0], ys[1]));
  EXPECT_TRUE(torch::allclose(dws[0], dws[1], 1e-5, 1e-5));
}

// A few large groups: each is split across the threads (src/cpu/kernels.cpp,
// split groups), and its pieces' sums are added in the order one thread adds
// them, so the output, the statistics and dx are the same bits at one thread
// (the forward takes whole groups there) and at the test's thread count
// (OMP_NUM_THREADS). Shapes: one group of 16 pieces, one of 12 with a tail
// past the last whole register, three rows of one group, two groups in a row;
// PLN and PLS; dx checked against float64 autograd as well.
TEST(Threads, LargeGroupsSplitAcrossThreadsGiveTheSameBits) {
  struct Shape {
    int64_t rows, channels, group;
  };
  const int saved = torch::get_num_threads();
  // More threads than the test was given would spin on a loaded machine (and
  // under qemu, which runs the cross-built tests on one thread).
  if (saved < 2) GTEST_SKIP() << "one thread (OMP_NUM_THREADS): no group to split";
  for (const Shape shape : {Shape{1, 65536, 65536}, Shape{1, 49190, 49190}, Shape{3, 32768, 32768},
                            Shape{1, 80000, 40000}}) {
    for (bool centering : {true, false}) {
      SCOPED_TRACE(std::to_string(shape.rows) + "x" + std::to_string(shape.channels) + " g=" +
                   std::to_string(shape.group) + (centering ? " PLN" : " PLS"));
      torch::manual_seed(5);
      const auto x0 = torch::randn({shape.rows, shape.channels}) * 3 + 2;
      const auto dy = torch::randn({shape.rows, shape.channels});
      pln::ParallelLN norm(ParallelLNOptions(shape.channels, shape.group).dim(2).centering(centering));
      torch::NoGradGuard no_grad;
      norm->weight.uniform_(0.5, 1.5);
      norm->bias.uniform_(-1, 1);
      std::vector<torch::Tensor> ys, dxs, dws, dbs;
      for (int threads : {1, saved}) {
        torch::set_num_threads(threads);
        torch::AutoGradMode grad(true);
        const auto x = x0.clone().requires_grad_();
        norm->zero_grad();
        const auto y = norm(x);
        y.backward(dy);
        ys.push_back(y.detach());
        dxs.push_back(x.grad());
        dws.push_back(norm->weight.grad().clone());
        dbs.push_back(norm->bias.grad().clone());
      }
      torch::set_num_threads(saved);
      EXPECT_TRUE(torch::equal(ys[0], ys[1])) << (ys[0] - ys[1]).abs().max().item<float>();
      EXPECT_TRUE(torch::equal(dxs[0], dxs[1])) << (dxs[0] - dxs[1]).abs().max().item<float>();
      // One row: each feature's dweight/dbias is one term either way; more
      // rows are summed in another order across threads.
      const double tol = shape.rows == 1 ? 0.0 : 1e-6;
      EXPECT_TRUE(torch::allclose(dws[0], dws[1], tol, tol)) << (dws[0] - dws[1]).abs().max().item<float>();
      EXPECT_TRUE(torch::allclose(dbs[0], dbs[1], tol, tol)) << (dbs[0] - dbs[1]).abs().max().item<float>();
      torch::AutoGradMode grad(true);
      const auto x64 = x0.to(torch::kDouble).requires_grad_();
      const auto ref = reference(x64, shape.channels, shape.group, Layout::kNC, centering, 1e-5, 2.0,
                                 norm->weight.to(torch::kDouble), norm->bias.to(torch::kDouble));
      ref.backward(dy.to(torch::kDouble));
      EXPECT_LT((ys[1].to(torch::kDouble) - ref).abs().max().item<double>(), 1e-5);
      EXPECT_LT((dxs[1].to(torch::kDouble) - x64.grad()).abs().max().item<double>(), 1e-5);
    }
  }
}

}  // namespace
}  // namespace pln::test
