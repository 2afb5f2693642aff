// Training pieces (experiments/train/): the learning-rate schedules and the
// divergence guard.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <train/divergence_guard.h>
#include <train/schedule.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

namespace pln::exp {
namespace {

using test::error_of;

// ---------------------------------------------------------------- schedules

TEST(Schedule, WarmupThenCosineToTheFloor) {
  Schedule s;
  s.kind = "cosine";
  s.lr = 1.0;
  s.total = 110;
  s.warmup = 10;
  s.floor = 0.1;
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(59), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 49 / 99.0)), 1e-12);
  EXPECT_NEAR(s.at(109), 0.1, 1e-12);
}

TEST(Schedule, StepDecayAndConstant) {
  Schedule s;
  s.kind = "step";
  s.lr = 0.1;
  s.total = 100;
  s.step_size = 30;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.at(29), 0.1);
  EXPECT_DOUBLE_EQ(s.at(30), 0.05);
  EXPECT_DOUBLE_EQ(s.at(95), 0.0125);
  s.kind = "constant";
  EXPECT_DOUBLE_EQ(s.at(95), 0.1);
}

TEST(Schedule, InvalidValuesAreRejected) {
  Schedule s;
  s.kind = "linear";
  EXPECT_NE(error_of([&] { s.validate(); }).find("one of constant|step|cosine, got 'linear'"), std::string::npos);
  s.kind = "cosine";
  s.floor = 2;
  EXPECT_NE(error_of([&] { s.validate(); }).find("lr_floor must be in [0, 1], got 2"), std::string::npos);
  s.floor = 0;
  s.lr = -1;
  EXPECT_NE(error_of([&] { s.validate(); }).find("lr must be a positive finite number"), std::string::npos);
}

// ------------------------------------------------------- divergence guard

TEST(DivergenceGuard, PutsBackTheLastParametersWithAFiniteLoss) {
  torch::nn::Linear net(3, 2);
  DivergenceGuard guard("test");
  EXPECT_TRUE(guard.check(0.5, 0, *net));
  guard.keep(*net);
  const auto kept = net->weight.detach().clone();
  {
    torch::NoGradGuard no_grad;
    net->weight.add_(5.0);
  }
  EXPECT_FALSE(guard.diverged());
  EXPECT_FALSE(guard.check(std::nan(""), 7, *net));
  EXPECT_TRUE(guard.diverged());
  EXPECT_EQ(guard.diverged_at(), 7);
  EXPECT_TRUE(torch::equal(net->weight, kept));
  // Nothing kept yet (the first step of a session): the parameters stay as they are.
  DivergenceGuard fresh("test");
  const auto now = net->weight.detach().clone();
  EXPECT_FALSE(fresh.check(INFINITY, 0, *net));
  EXPECT_TRUE(torch::equal(net->weight, now));
}

}  // namespace
}  // namespace pln::exp
