// The module and its holder: parameters, printing, cloning, serialisation,
// use inside torch::nn::Sequential, and PQNorm.

#include <gtest/gtest.h>
#include <unistd.h>  // getpid

#include "reference.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

namespace pln::test {
namespace {

TEST(Module, ParametersAreNamedWeightAndBias) {
  pln::ParallelLN norm(ParallelLNOptions(32, 8));
  const auto params = norm->named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_TRUE(torch::equal(params["weight"], torch::ones({32})));
  EXPECT_TRUE(torch::equal(params["bias"], torch::zeros({32})));
  pln::ParallelLN plain(ParallelLNOptions(32, 8).affine(false));
  EXPECT_EQ(plain->parameters().size(), 0u);
  EXPECT_FALSE(plain->weight.defined());
}

TEST(Module, PrettyPrint) {
  std::ostringstream os;
  os << pln::ParallelLN(ParallelLNOptions(64, 4).dim(2).centering(false));
  EXPECT_EQ(os.str(),
            "pln::ParallelLN(64, num_per_group=4, eps=1e-05, centering=false, affine=true, layout=NC)");
}

TEST(Module, SaveLoadRoundTrip) {
  torch::manual_seed(31);
  pln::ParallelLN saved(ParallelLNOptions(16, 4).dim(3));
  {
    torch::NoGradGuard guard;
    saved->weight.uniform_(0.5, 1.5);
    saved->bias.normal_();
  }
  // One file a process: CTest runs this binary in several processes at once (one per capability).
  const auto path = std::filesystem::temp_directory_path() /
                    ("pln_module_roundtrip_" + std::to_string(::getpid()) + ".pt");
  torch::save(saved, path.string());
  pln::ParallelLN loaded(ParallelLNOptions(16, 4).dim(3));
  torch::load(loaded, path.string());
  std::filesystem::remove(path);
  EXPECT_TRUE(torch::equal(loaded->weight, saved->weight));
  EXPECT_TRUE(torch::equal(loaded->bias, saved->bias));
  const auto x = torch::randn({2, 5, 16});
  EXPECT_TRUE(torch::equal(loaded(x), saved(x)));
}

TEST(Module, CloneIsDeep) {
  pln::ParallelLN norm(ParallelLNOptions(8, 2).dim(2));
  auto copy = std::dynamic_pointer_cast<ParallelLNImpl>(norm->clone());
  ASSERT_TRUE(copy);
  {
    torch::NoGradGuard guard;
    copy->weight.fill_(3.0);
  }
  EXPECT_TRUE(torch::equal(norm->weight, torch::ones({8})));
  EXPECT_EQ(copy->options.num_per_group(), 2);
}

TEST(Module, InsideSequentialTrains) {
  torch::manual_seed(32);
  torch::nn::Sequential net(torch::nn::Linear(4, 16), pln::ParallelLN(ParallelLNOptions(16, 4).dim(2)),
                            torch::nn::Linear(16, 1));
  torch::optim::SGD opt(net->parameters(), 0.1);
  const auto x = torch::randn({32, 4}), t = torch::randn({32, 1});
  const float before = torch::mse_loss(net->forward(x), t).item<float>();
  for (int i = 0; i < 50; ++i) {
    opt.zero_grad();
    auto loss = torch::mse_loss(net->forward(x), t);
    loss.backward();
    opt.step();
  }
  EXPECT_LT(torch::mse_loss(net->forward(x), t).item<float>(), before);
}

TEST(PQNorm, TwoTwoIsParallelLN) {
  torch::manual_seed(33);
  const auto x = torch::randn({3, 12, 2, 2});
  pln::PQNorm pq(PQNormOptions(12, 3));
  pln::ParallelLN ln(ParallelLNOptions(12, 3));
  EXPECT_TRUE(torch::allclose(pq(x), ln(x), 1e-6, 1e-6));
}

TEST(PQNorm, GeneralExponents) {
  torch::manual_seed(34);
  const auto x = torch::randn({4, 6}, torch::kDouble);
  const double p = 3.0, q = 1.5, eps = 1e-5;
  const auto y = functional::pq_norm(x, PQNormOptions(6, 3).p(p).q(q).dim(2).affine(false));
  const auto xg = x.reshape({4, 2, 3});
  const auto xc = xg - xg.mean(2, true);
  const auto expected = (xc.sign() * xc.abs().pow(p / q) /
                         (xc.abs().pow(p).mean(2, true) + eps).pow(1.0 / q))
                            .reshape({4, 6});
  EXPECT_TRUE(torch::allclose(y, expected, 1e-12, 1e-12));
  std::ostringstream os;
  os << pln::PQNorm(PQNormOptions(6, 3).p(p).q(q).dim(2));
  EXPECT_NE(os.str().find("p=3, q=1.5"), std::string::npos) << os.str();
}

TEST(Options, LayoutNames) {
  for (Layout layout : {Layout::kNC, Layout::kNTC, Layout::kNCHW, Layout::kNHWC, Layout::kNCL}) {
    EXPECT_EQ(layout_from_string(to_string(layout)), layout);
  }
  EXPECT_EQ(ParallelLNOptions(4, 2).dim(3).resolved_layout(), Layout::kNTC);
  EXPECT_EQ(ParallelLNOptions(4, 2).dim(3).layout(Layout::kNCL).resolved_layout(), Layout::kNCL);
}

}  // namespace
}  // namespace pln::test
