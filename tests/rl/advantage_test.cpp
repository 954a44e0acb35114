// GAE and explained variance against hand-computed numbers.
#include "rl/advantage.h"

#include <gtest/gtest.h>

namespace kforge::rl {
namespace {

TEST(Gae, OutcomeRewardWithGammaOneLambdaPaper) {
  // delta_2 = 1 - 0.4 = 0.6; delta_1 = 0.4 - 0.2 = 0.2; delta_0 = 0.2 - 0.5 = -0.3.
  // A_2 = 0.6; A_1 = 0.2 + 0.95 * 0.6 = 0.77; A_0 = -0.3 + 0.95 * 0.77 = 0.4315.
  auto a = gae({0, 0, 1}, {0.5, 0.2, 0.4}, 1.0, 0.95);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_NEAR(a[2], 0.6, 1e-12);
  EXPECT_NEAR(a[1], 0.77, 1e-12);
  EXPECT_NEAR(a[0], 0.4315, 1e-12);
}

TEST(Gae, LambdaOneIsReturnMinusValue) {
  auto a = gae({0, 0, 1}, {0.5, 0.2, 0.4}, 1.0, 1.0);
  EXPECT_NEAR(a[0], 0.5, 1e-12);
  EXPECT_NEAR(a[1], 0.8, 1e-12);
  EXPECT_NEAR(a[2], 0.6, 1e-12);
}

TEST(Gae, DiscountsWithGamma) {
  // delta_1 = 2; delta_0 = 1 + 0.5 * 0 - 0 = 1; A_0 = 1 + 0.5 * 1 * 2 = 2.
  auto a = gae({1, 2}, {0, 0}, 0.5, 1.0);
  EXPECT_NEAR(a[1], 2.0, 1e-12);
  EXPECT_NEAR(a[0], 2.0, 1e-12);
}

TEST(Gae, EmptyTrajectory) {
  EXPECT_TRUE(gae({}, {}, 1.0, 0.95).empty());
}

TEST(ExplainedVariance, PerfectConstantAndUseless) {
  EXPECT_NEAR(explained_variance({1, 2, 3}, {1, 2, 3}), 1.0, 1e-12);
  // Predicting the mean explains nothing.
  EXPECT_NEAR(explained_variance({2, 2, 2}, {1, 2, 3}), 0.0, 1e-12);
  // Residuals {1, 0, -1}... predicted {0, 2, 4} against {1, 2, 3}: var(res) = 2/3, var(t) = 2/3.
  EXPECT_NEAR(explained_variance({0, 2, 4}, {1, 2, 3}), 0.0, 1e-12);
  EXPECT_EQ(explained_variance({1, 1}, {5, 5}), 0.0);
}

}  // namespace
}  // namespace kforge::rl
