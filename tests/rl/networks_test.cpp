// The actor-critic: masked softmax, the asymmetric PPO clip, checkpoints, and that each update moves
// the networks the way it should.
#include "rl/networks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "rl/ppo.h"
#include "rl/torch_nets.h"

namespace kforge::rl {
namespace {

// A state of 3 features and 3 actions with one-hot features; the middle action is the good one.
Decision toy_decision(int chosen) {
  Decision d;
  d.state = {0.5f, -0.25f, 1.0f};
  d.actions = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  d.chosen = chosen;
  return d;
}

NetworkDims toy_dims() {
  return NetworkDims{3, 3, 16};
}

double prob(const ActorCritic& net, const Decision& d, int action) {
  return std::exp(net.log_probs(d.state, d.actions)[static_cast<size_t>(action)]);
}

TEST(ClippedSurrogate, AsymmetricClipBounds) {
  auto ratio = torch::tensor({1.3, 0.7, 1.3, 0.7, 1.1}, torch::requires_grad());
  auto adv = torch::tensor({1.0, -1.0, -1.0, 1.0, 1.0});
  auto s = clipped_surrogate(ratio, adv, 0.2, 0.28);
  EXPECT_NEAR(s[0].item<double>(), 1.28, 1e-6);  // positive advantage: capped at 1 + 0.28
  EXPECT_NEAR(s[1].item<double>(), -0.8, 1e-6);  // negative advantage: floored at 1 - 0.2
  EXPECT_NEAR(s[2].item<double>(), -1.3, 1e-6);  // pessimistic side is not clipped
  EXPECT_NEAR(s[3].item<double>(), 0.7, 1e-6);
  EXPECT_NEAR(s[4].item<double>(), 1.1, 1e-6);  // inside the range
  s.sum().backward();
  auto g = ratio.grad();
  EXPECT_EQ(g[0].item<double>(), 0.0);  // clipped: no gradient
  EXPECT_EQ(g[1].item<double>(), 0.0);
  EXPECT_NEAR(g[2].item<double>(), -1.0, 1e-6);
  EXPECT_NEAR(g[4].item<double>(), 1.0, 1e-6);
}

TEST(MaskedLogSoftmax, IgnoresPaddingAndSumsToOne) {
  auto scores = torch::tensor({{1.0, 2.0, 100.0}, {0.0, 0.0, 0.0}});
  auto mask = torch::tensor({{true, true, false}, {true, true, true}});
  auto lp = masked_log_softmax(scores, mask);
  EXPECT_NEAR(lp[0].exp().masked_select(mask[0]).sum().item<double>(), 1.0, 1e-6);
  EXPECT_EQ(lp[0][2].item<double>(), 0.0);
  EXPECT_NEAR(lp[1][0].item<double>(), std::log(1.0 / 3), 1e-6);
  EXPECT_NEAR(masked_entropy(lp, mask)[1].item<double>(), std::log(3.0), 1e-5);
}

TEST(ActorCritic, SameSeedSameWeights) {
  auto a = ActorCritic::create(toy_dims(), 7);
  auto b = ActorCritic::create(toy_dims(), 7);
  auto c = ActorCritic::create(toy_dims(), 8);
  Decision d = toy_decision(0);
  EXPECT_EQ(a.log_probs(d.state, d.actions), b.log_probs(d.state, d.actions));
  EXPECT_NE(a.log_probs(d.state, d.actions), c.log_probs(d.state, d.actions));
}

TEST(ActorCritic, CheckpointRoundTripGivesIdenticalOutputsAndOptimizerState) {
  auto dir = std::filesystem::temp_directory_path() / ("kforge_rl_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "net.pt").string();
  auto net = ActorCritic::create(toy_dims(), 3);
  std::mt19937_64 rng(1);
  Decision d = toy_decision(1);
  // A few updates so that Adam has moments to save.
  cross_entropy_update(net, {&d}, SupervisedConfig{3, 8, 1.0}, rng);
  net.counters = {"rft", 5};
  ASSERT_TRUE(net.save(path).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  auto loaded = ActorCritic::load(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded->dims(), net.dims());
  EXPECT_EQ(loaded->counters.stage, "rft");
  EXPECT_EQ(loaded->counters.iteration, 5);
  EXPECT_EQ(loaded->log_probs(d.state, d.actions), net.log_probs(d.state, d.actions));
  EXPECT_EQ(loaded->value(d.state), net.value(d.state));
  // Same optimizer state: the same update gives the same weights again.
  std::mt19937_64 r1(9), r2(9);
  cross_entropy_update(net, {&d}, SupervisedConfig{1, 8, 1.0}, r1);
  cross_entropy_update(*loaded, {&d}, SupervisedConfig{1, 8, 1.0}, r2);
  EXPECT_EQ(loaded->log_probs(d.state, d.actions), net.log_probs(d.state, d.actions));
  std::filesystem::remove_all(dir);
}

TEST(ActorCritic, LoadRejectsMissingAndDamagedFiles) {
  EXPECT_EQ(ActorCritic::load("/nonexistent/kforge.pt").status().code(), ErrorCode::kNotFound);
  auto path = std::filesystem::temp_directory_path() / ("kforge_rl_bad_" + std::to_string(::getpid()) + ".pt");
  { std::ofstream(path) << "not a checkpoint"; }
  auto r = ActorCritic::load(path.string());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST(ActorCritic, CheckDimsSaysWhatDiffers) {
  EXPECT_TRUE(check_dims(toy_dims(), 3, 3).is_ok());
  auto s = check_dims(toy_dims(), 4, 3);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("train again"), std::string::npos);
}

TEST(PpoUpdate, PositiveAdvantageRaisesTheActionsProbability) {
  auto net = ActorCritic::create(toy_dims(), 11);
  Decision good = toy_decision(1), bad = toy_decision(2);
  double p_good = prob(net, good, 1), p_bad = prob(net, bad, 2);
  std::vector<PolicySample> samples;
  for (int i = 0; i < 8; ++i) {
    samples.push_back({{&good}, net.log_probs(good.state, good.actions)[1], +1.0, 1.0});
    samples.push_back({{&bad}, net.log_probs(bad.state, bad.actions)[2], -1.0, 1.0});
  }
  std::mt19937_64 rng(2);
  PpoConfig config;
  config.epochs = 4;
  config.minibatch = 4;
  auto stats = ppo_update(net, samples, {}, config, rng);
  EXPECT_GT(prob(net, good, 1), p_good);
  EXPECT_LT(prob(net, bad, 2), p_bad);
  EXPECT_GE(stats.approx_kl, 0.0);
  EXPECT_GT(stats.entropy, 0.0);
}

TEST(PpoUpdate, PlanSampleSumsTheLogProbsOfItsDecisions) {
  // Two decisions in one sample (a single-turn plan): both choices become more likely together.
  auto net = ActorCritic::create(toy_dims(), 12);
  Decision a = toy_decision(0), b = toy_decision(1);
  double old = net.chosen_log_probs({&a, &b})[0] + net.chosen_log_probs({&a, &b})[1];
  double pa = prob(net, a, 0), pb = prob(net, b, 1);
  std::vector<PolicySample> samples(4, PolicySample{{&a, &b}, old, 1.0, 1.0});
  PpoConfig config;
  config.normalize_advantages = false;
  std::mt19937_64 rng(3);
  ppo_update(net, samples, {}, config, rng);
  EXPECT_GT(prob(net, a, 0), pa);
  EXPECT_GT(prob(net, b, 1), pb);
}

TEST(ValueUpdate, FitsTargets) {
  auto net = ActorCritic::create(toy_dims(), 13);
  std::vector<float> s1 = {1, 0, 0}, s2 = {0, 1, 0};
  std::vector<ValueSample> samples = {{&s1, 3.0}, {&s2, -1.0}};
  std::mt19937_64 rng(4);
  net.set_learning_rates(3e-4, 1e-2);
  double first = value_update(net, samples, SupervisedConfig{1, 2, 1.0}, rng);
  double last = value_update(net, samples, SupervisedConfig{200, 2, 1.0}, rng);
  EXPECT_LT(last, first);
  EXPECT_NEAR(net.value(s1), 3.0, 0.3);
  EXPECT_NEAR(net.value(s2), -1.0, 0.3);
}

}  // namespace
}  // namespace kforge::rl
