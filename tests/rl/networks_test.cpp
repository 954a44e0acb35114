// The actor-critic: masked softmax, the asymmetric PPO clip, checkpoints, and that each update moves
// the networks the way it should.
#include "rl/networks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "agent/action_space.h"
#include "agent/features.h"
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

// Issue #29: a checkpoint carries the action space it was made with; one of another catalogue, or one
// written before checkpoints carried it, is named as such with the command that makes it again.
TEST(ActorCritic, CheckpointCarriesItsActionSpace) {
  auto dir = std::filesystem::temp_directory_path() / ("kforge_rl_space_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto net = ActorCritic::create(toy_dims(), 3);
  ASSERT_TRUE(net.action_space.has_value());
  EXPECT_EQ(net.action_space->fingerprint, agent::action_space_fingerprint());

  const auto path = (dir / "net.pt").string();
  ASSERT_TRUE(net.save(path).is_ok());
  auto loaded = ActorCritic::load(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded->action_space, agent::current_action_space());
  EXPECT_TRUE(check_action_space(*loaded, path).is_ok());

  // Made with a catalogue that lacked a skill: both fingerprints and the skill named.
  auto older = agent::current_action_space();
  const std::string dropped = older.skills.back();
  older.skills.pop_back();
  older.fingerprint = agent::fingerprint_of(older);
  net.action_space = older;
  ASSERT_TRUE(net.save(path).is_ok());
  loaded = ActorCritic::load(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded->action_space, older);
  Status s = check_action_space(*loaded, path);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(older.fingerprint), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(agent::action_space_fingerprint()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("skills added: " + dropped), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("kforge train"), std::string::npos) << s.message();

  // Written before checkpoints carried it: unknown, and the shipped policy's recipe for the shipped path.
  net.action_space.reset();
  const auto shipped = (dir / "policies" / "learned-ci.pt").string();
  ASSERT_TRUE(net.save(shipped).is_ok());
  loaded = ActorCritic::load(shipped);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->action_space.has_value());
  s = check_action_space(*loaded, shipped);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("action space unknown"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--preset ci"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cp RUN/ppo.pt " + shipped), std::string::npos) << s.message();
  std::filesystem::remove_all(dir);
}

// Issue #29 item 3, first step: a checkpoint of another catalogue acts the same on each named skill once its
// slots are remapped by name; a skill it never saw has no learned preference (a zero column).
TEST(ActorCritic, RemapSkillSlotsFollowsTheNames) {
  const auto& now = agent::current_action_space();
  auto net = ActorCritic::create(NetworkDims{agent::kStateDim, agent::kActionDim, 8}, 5);
  // Made with a catalogue in reverse order that lacked today's first skill.
  agent::ActionSpaceVersion was = now;
  was.skills.assign(now.skills.rbegin(), now.skills.rend() - 1);
  was.fingerprint = agent::fingerprint_of(was);
  net.action_space = was;
  std::vector<float> state(agent::kStateDim, 0.1f);
  auto action_of_slot = [](int slot) {
    std::vector<float> a(agent::kActionDim, 0.0f);
    if (slot >= 0) a[static_cast<size_t>(agent::kActionSkill + slot)] = 1.0f;
    a[agent::kActionCostChange] = -0.5f;
    return a;
  };
  auto score = [&](const ActorCritic& n, int slot) {
    // Two actions: the skill's and a fixed reference, so the log-probability reads the skill's score.
    return n.log_probs(state, {action_of_slot(slot), action_of_slot(-1)})[0];
  };
  std::vector<double> before;  // by the checkpoint's slots
  for (size_t i = 0; i < was.skills.size(); ++i) before.push_back(score(net, static_cast<int>(i)));
  const double no_skill = score(net, -1);

  auto unseen = remap_skill_slots(net);
  ASSERT_TRUE(unseen.is_ok()) << unseen.status().message();
  EXPECT_EQ(*unseen, std::vector<std::string>{now.skills.front()});
  EXPECT_EQ(net.action_space->skills, now.skills);
  EXPECT_TRUE(check_action_space(net, "net.pt").is_ok());  // only the skills' order and set differed
  for (size_t j = 0; j < now.skills.size(); ++j) {
    const int slot = static_cast<int>(j);
    if (j == 0) {
      EXPECT_NEAR(score(net, slot), no_skill, 1e-6) << now.skills[j];
      continue;
    }
    const size_t i =
        static_cast<size_t>(std::find(was.skills.begin(), was.skills.end(), now.skills[j]) - was.skills.begin());
    EXPECT_NEAR(score(net, slot), before[i], 1e-6) << now.skills[j];
  }
  // Unknown or other sizes: refused.
  net.action_space.reset();
  EXPECT_FALSE(remap_skill_slots(net).is_ok());
  was.state_dim += 1;
  was.fingerprint = agent::fingerprint_of(was);
  net.action_space = was;
  EXPECT_FALSE(remap_skill_slots(net).is_ok());
}

TEST(ActionSpace, FingerprintFollowsEveryListAndSize) {
  const auto& now = agent::current_action_space();
  EXPECT_EQ(now.fingerprint.size(), 12u);
  EXPECT_EQ(agent::fingerprint_of(now), now.fingerprint);
  EXPECT_EQ(static_cast<int>(now.skills.size()), skills::kNumSkills);
  EXPECT_EQ(now.action_dim, agent::kActionDim);
  auto changed = [&](auto edit) {
    auto v = now;
    edit(v);
    return agent::fingerprint_of(v) != now.fingerprint;
  };
  EXPECT_TRUE(changed([](auto& v) { std::swap(v.skills[0], v.skills[1]); }));  // the order is the slots' meaning
  EXPECT_TRUE(changed([](auto& v) { v.strategies.push_back("new_template"); }));
  EXPECT_TRUE(changed([](auto& v) { v.knobs.pop_back(); }));
  EXPECT_TRUE(changed([](auto& v) { v.state_dim += 1; }));
  EXPECT_TRUE(changed([](auto& v) { v.max_skills += 1; }));
  // The JSON record round-trips, and a record whose lists do not hash to its fingerprint is refused.
  auto j = Json::parse(agent::action_space_to_json(now).dump());
  auto back = agent::action_space_from_json(j);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*back, now);
  j["skills"].push_back("edited_in");
  EXPECT_FALSE(agent::action_space_from_json(j).is_ok());
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
