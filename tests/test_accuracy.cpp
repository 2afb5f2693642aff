// Float32 accuracy of the fused kernels at every group size, held to ATen's
// LayerNorm on the same groups: the error of the output, dx, dweight and dbias
// against a float64 reference, relative to the reference's largest value, is
// at most twice ATen's on the same input (plus one unit of float32 rounding,
// so that a group size where both are exact, as g = 1, does not compare zero
// with zero). Inputs: randn, relu(randn) (a mean far from zero, the case
// sequential sums lose most on) and randn at a common offset of 1e4, where
// ATen's LayerNorm loses digits and the fused kernels must not (their own
// bound is the one of OffsetParity: a few units of float32 rounding).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "reference.h"

namespace pln::test {
namespace {

struct AccuracyCase {
  Layout layout;
  int64_t g;
  int64_t groups;  // per position
};

// The inputs each case is checked on (one process a group size: CTest runs
// each test in a process of its own, and each loads LibTorch).
const char* const kInputs[] = {"randn", "relu", "offset"};

std::string name(const AccuracyCase& c) {
  return to_string(c.layout) + "_g" + std::to_string(c.g) + "x" + std::to_string(c.groups);
}

void PrintTo(const AccuracyCase& c, std::ostream* os) { *os << name(c); }

// Every group size class: the across-groups kernels (1-16), the transposing
// ones (8-64), the within-group kernels (large g, with and without a tail
// past the vector width) up to 8192, one group of 65536 (split across the
// threads); a width that is one group (LayerNorm) and one of several.
std::vector<AccuracyCase> accuracy_cases() {
  std::vector<AccuracyCase> out;
  for (int64_t g : {1, 2, 3, 4, 7, 8, 16, 24, 32, 40, 64, 100, 128, 200, 256, 768, 1000, 2048, 4096, 4104, 8192,
                    65536}) {
    out.push_back({Layout::kNC, g, g >= 2048 ? 1 : std::max<int64_t>(2, 768 / g)});
  }
  // Rows of whole blocks of eight groups of 40 and 64 (the register groups).
  for (int64_t g : {40, 64}) out.push_back({Layout::kNC, g, 16});
  // NCHW: at least 48 channels, so that the largest |dweight|, the scale of
  // its error, is not that of a handful of noisy sums.
  for (int64_t g : {1, 3, 4, 8, 16, 64, 768, 4096}) {
    out.push_back({Layout::kNCHW, g, std::max<int64_t>(2, 48 / g)});
  }
  return out;
}

// [positions, features] views of a tensor of the case's layout, and back.
torch::Tensor features_last(const torch::Tensor& t, Layout layout) {
  return layout == Layout::kNCHW ? t.permute({0, 2, 3, 1}) : t;
}

struct Errors {
  double y, dx, dweight, dbias;
};

// x is float32; returns the errors of `forward` against the float64 reference
// computed from x's own values less the offset (exact in float64).
template <typename Forward>
Errors errors_of(Forward forward, const torch::Tensor& x0, double offset, const torch::Tensor& w,
                 const torch::Tensor& b, const torch::Tensor& dy, const AccuracyCase& c, int64_t C) {
  const torch::Tensor x = x0.clone().requires_grad_();
  const torch::Tensor wg = w.clone().requires_grad_(), bg = b.clone().requires_grad_();
  forward(x, wg, bg).backward(dy);
  const torch::Tensor xr = (x0.to(torch::kDouble) - offset).requires_grad_();
  const torch::Tensor wr = w.to(torch::kDouble).requires_grad_(), br = b.to(torch::kDouble).requires_grad_();
  const torch::Tensor yr = reference(xr, C, c.g, c.layout, true, 1e-5, 2.0, wr, br);
  yr.backward(dy.to(torch::kDouble));
  const torch::Tensor y = forward(x0, w, b).detach();
  return {relative_error(y, yr.detach()), relative_error(x.grad(), xr.grad()),
          relative_error(wg.grad(), wr.grad()), relative_error(bg.grad(), br.grad())};
}

class Accuracy : public ::testing::TestWithParam<AccuracyCase> {};

void check_accuracy(const AccuracyCase& c, const std::string& input) {
  const int64_t C = c.g * c.groups;
  // At least 2^16 values, at least 8 positions.
  const int64_t positions = std::max<int64_t>(8, (int64_t(1) << 16) / C);
  const std::vector<int64_t> shape = c.layout == Layout::kNCHW ? std::vector<int64_t>{2, C, positions / 8, 4}
                                                                 : std::vector<int64_t>{positions, C};
  torch::manual_seed(7);
  const double offset = input == "offset" ? 1e4 : 0.0;
  torch::Tensor x0 = torch::randn(shape, torch::kDouble);
  if (input == "relu") x0 = x0.relu();
  x0 = (x0 + offset).to(torch::kFloat);
  const torch::Tensor w = torch::rand({C}) + 0.5, b = torch::randn({C}), dy = torch::randn(shape);

  const auto options = ParallelLNOptions(C, c.g).layout(c.layout);
  ASSERT_TRUE(detail::uses_fused_kernels(x0, options));
  const auto fused = [&](const torch::Tensor& x, const torch::Tensor& wt, const torch::Tensor& bt) {
    return functional::parallel_ln(x, options, wt, bt);
  };
  // ATen's LayerNorm over each group, the per-feature affine after it.
  const auto layer_norm = [&](const torch::Tensor& x, const torch::Tensor& wt, const torch::Tensor& bt) {
    const torch::Tensor t = features_last(x, c.layout);
    const torch::Tensor n = torch::layer_norm(t.reshape({-1, c.g}), {c.g}).reshape(t.sizes()) * wt + bt;
    return c.layout == Layout::kNCHW ? n.permute({0, 3, 1, 2}) : n;
  };
  const Errors ours = errors_of(fused, x0, offset, w, b, dy, c, C);
  const Errors aten = errors_of(layer_norm, x0, offset, w, b, dy, c, C);
  constexpr double kUnit = 1.0 / (1 << 23);  // float32's rounding unit, 2^-23
  // Within a few units of rounding whatever the offset (OffsetParity's bound).
  constexpr double kOwnBound = 4e-6;
  const std::pair<const char*, std::pair<double, double>> checks[] = {
      {"output", {ours.y, aten.y}},
      {"dx", {ours.dx, aten.dx}},
      {"dweight", {ours.dweight, aten.dweight}},
      {"dbias", {ours.dbias, aten.dbias}}};
  for (const auto& [what, e] : checks) {
    EXPECT_LE(e.first, 2 * e.second + kUnit) << what << ": pln " << e.first << ", ATen " << e.second;
    EXPECT_LT(e.first, kOwnBound) << what;
  }
  std::printf("%-28s pln y %.1e dx %.1e dw %.1e db %.1e | ATen y %.1e dx %.1e dw %.1e db %.1e\n",
              (name(c) + "_" + input).c_str(), ours.y, ours.dx, ours.dweight, ours.dbias, aten.y, aten.dx, aten.dweight,
              aten.dbias);
}

TEST_P(Accuracy, FloatErrorIsWithinTwiceLayerNorms) {
  for (const char* input : kInputs) {
    SCOPED_TRACE(input);
    check_accuracy(GetParam(), input);
  }
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, Accuracy, ::testing::ValuesIn(accuracy_cases()),
                         [](const ::testing::TestParamInfo<AccuracyCase>& info) { return name(info.param); });

}  // namespace
}  // namespace pln::test
