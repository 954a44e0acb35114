// The agent's environment and cost-model evaluator: action space, rewards, fork, errors, features.
#include <gtest/gtest.h>

#include <cmath>

#include "agent/cost_model_evaluator.h"
#include "agent/env.h"
#include "agent/features.h"
#include "agent_test_graphs.h"
#include "costmodel/measurements.h"
#include "costmodel/roofline.h"
#include "schedule/planner.h"

namespace kforge::agent {
namespace {

using testing::all_test_tasks;
using testing::kChainGraph;
using testing::kConvGraph;
using testing::kGemmGraph;
using testing::task_from;

Environment make_env(EnvConfig config = {}) {
  return Environment(std::make_shared<CostModelEvaluator>(), std::move(config));
}

// The index of the first action of `skill` (or -1).
int first_action_of(const Observation& obs, const std::string& skill) {
  for (size_t i = 0; i < obs.actions.size(); ++i) {
    if (obs.actions[i].skill == skill) return static_cast<int>(i);
  }
  return -1;
}

TEST(AgentEnv, ActionsAreEverySkillSiteThenStop) {
  for (const Task& task : all_test_tasks()) {
    Environment env = make_env();
    auto obs = env.reset(task);
    ASSERT_TRUE(obs.is_ok()) << obs.status().message();
    std::vector<std::pair<std::string, std::vector<int>>> expected;
    for (const auto& skill : skills::all_skills()) {
      for (const auto& site : skill.sites(task.graph, obs->schedule))
        expected.emplace_back(std::string(skill.name), site.kernels);
    }
    ASSERT_EQ(obs->actions.size(), expected.size() + 1) << task.name << " " << task.protocol;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(obs->actions[i].skill, expected[i].first);
      EXPECT_EQ(obs->actions[i].site.kernels, expected[i].second);
    }
    EXPECT_TRUE(obs->actions.back().is_stop());
    EXPECT_EQ(obs->actions.back().describe(), "stop");
    EXPECT_EQ(obs->schedule.kernels.size(), task.graph.nodes().size()) << "the first schedule: one kernel per op";
  }
}

TEST(AgentEnv, ToleranceFollowsTheProtocol) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kGemmGraph, "cuda-agent")).is_ok());
  EXPECT_DOUBLE_EQ(env.observation().schedule.tolerance, 1e-2);
  EXPECT_NE(first_action_of(env.observation(), "tf32_contractions"), -1);
  ASSERT_TRUE(env.reset(task_from(kGemmGraph, "kernelbench")).is_ok());
  EXPECT_DOUBLE_EQ(env.observation().schedule.tolerance, 1e-4);
  EXPECT_EQ(first_action_of(env.observation(), "tf32_contractions"), -1) << "TF32 cannot keep 1e-4";
  EXPECT_FALSE(env.reset(task_from(kGemmGraph, "fastest")).is_ok());
}

TEST(AgentEnv, StopEndsTheEpisodeWithTheMilestoneReward) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  const int stop = static_cast<int>(env.observation().actions.size()) - 1;
  auto r = env.step(stop);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->done);
  EXPECT_TRUE(env.done());
  // The first schedule is eager itself: correct, not faster: 1.
  EXPECT_EQ(r->reward, 1.0);
  EXPECT_EQ(env.episode_reward(), 1.0);
  EXPECT_EQ(r->info["action"], "stop");
  EXPECT_EQ(env.evaluations(), 1) << "stop evaluates nothing new";
  EXPECT_FALSE(env.step(0).is_ok()) << "a finished episode takes no more steps";
}

TEST(AgentEnv, RewardsAreZeroUntilDoneThenTheBestCandidates) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kGemmGraph)).is_ok());
  std::vector<double> rewards;
  // Fuse the epilogue (sites first in the list), then TF32, then stop.
  while (!env.done()) {
    const auto& obs = env.observation();
    int a = first_action_of(obs, "fuse_elementwise");
    if (a < 0) a = first_action_of(obs, "tf32_contractions");
    if (a < 0) a = static_cast<int>(obs.actions.size()) - 1;
    auto r = env.step(a);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    rewards.push_back(r->reward);
    EXPECT_EQ(r->done, env.done());
  }
  ASSERT_GE(rewards.size(), 3u);
  for (size_t i = 0; i + 1 < rewards.size(); ++i) EXPECT_EQ(rewards[i], 0.0) << "turn " << i;
  // Fused and on tensor cores: more than 5 % faster than predicted eager and torch.compile.
  EXPECT_EQ(rewards.back(), 3.0);
  EXPECT_EQ(env.observation().best->result.outcome, sandbox::Outcome::kOk);
  EXPECT_EQ(env.best_schedule().precision, "tf32");
}

TEST(AgentEnv, EpisodeEndsWhenNoSiteRemains) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  ASSERT_EQ(env.observation().actions.size(), 3u);  // two fusions, stop
  auto r1 = env.step(0);
  ASSERT_TRUE(r1.is_ok());
  EXPECT_FALSE(r1->done);
  EXPECT_EQ(r1->reward, 0.0);
  auto r2 = env.step(0);
  ASSERT_TRUE(r2.is_ok());
  EXPECT_TRUE(r2->done) << "no fusion left";
  // One kernel: as fast as predicted torch.compile, faster than eager: 2.
  EXPECT_EQ(r2->reward, 2.0);
  EXPECT_EQ(env.observation().schedule.kernels.size(), 1u);
  EXPECT_EQ(env.evaluations(), 3);
}

TEST(AgentEnv, EditsAreEvaluatedOnlyWhereTheEpisodeEnds) {
  // The chain's two fusions as edits: nothing measured until the episode ends on the fused schedule,
  // which is then evaluated once and is the same candidate two evaluated steps reach.
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  auto e1 = env.edit(0);
  ASSERT_TRUE(e1.is_ok()) << e1.status().message();
  EXPECT_FALSE(e1->done);
  EXPECT_FALSE(env.observation().evaluated);
  EXPECT_EQ(env.evaluations(), 1);
  EXPECT_EQ(env.observation().schedule.kernels.size(), 2u);  // applied, though not measured
  EXPECT_EQ(env.observation().last.result.t_candidate, env.observation().best->result.t_candidate);
  auto e2 = env.edit(0);
  ASSERT_TRUE(e2.is_ok());
  EXPECT_TRUE(e2->done) << "no fusion left";
  EXPECT_TRUE(env.observation().evaluated);
  EXPECT_EQ(env.evaluations(), 2);
  EXPECT_EQ(e2->reward, 2.0);

  Environment stepped = make_env();
  ASSERT_TRUE(stepped.reset(task_from(kChainGraph)).is_ok());
  ASSERT_TRUE(stepped.step(0).is_ok());
  ASSERT_TRUE(stepped.step(0).is_ok());
  EXPECT_EQ(schedule_state_key(stepped.task().graph, stepped.best_schedule()),
            schedule_state_key(env.task().graph, env.best_schedule()));
  EXPECT_EQ(stepped.evaluations(), 3);

  // Stop after an edit evaluates it; so does the turn limit.
  Environment stopped = make_env();
  ASSERT_TRUE(stopped.reset(task_from(kChainGraph)).is_ok());
  ASSERT_TRUE(stopped.edit(0).is_ok());
  auto s = stopped.edit(static_cast<int>(stopped.observation().actions.size()) - 1);
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(s->done && stopped.observation().evaluated);
  EXPECT_EQ(stopped.evaluations(), 2);
  Environment limited = make_env({.max_turns = 1});
  ASSERT_TRUE(limited.reset(task_from(kChainGraph)).is_ok());
  auto l = limited.edit(0);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->done && limited.observation().evaluated);
  EXPECT_EQ(limited.evaluations(), 2);
}

TEST(AgentEnv, MaxTurnsEndsTheEpisode) {
  Environment env = make_env({.max_turns = 1});
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  auto r = env.step(0);
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->done);
  EXPECT_EQ(r->observation.turn, 1);
  EXPECT_EQ(r->reward, env.episode_reward());
}

TEST(AgentEnv, ForkIsIndependent) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kGemmGraph)).is_ok());
  const size_t kernels = env.observation().schedule.kernels.size();
  const size_t actions = env.observation().actions.size();
  Environment copy = env.fork();
  ASSERT_TRUE(copy.step(0).is_ok());
  ASSERT_TRUE(copy.step(static_cast<int>(copy.observation().actions.size()) - 1).is_ok());
  EXPECT_TRUE(copy.done());
  EXPECT_FALSE(env.done());
  EXPECT_EQ(env.observation().turn, 0);
  EXPECT_EQ(env.observation().schedule.kernels.size(), kernels);
  EXPECT_EQ(env.observation().actions.size(), actions);
  EXPECT_EQ(env.evaluations(), 1);
  EXPECT_EQ(copy.evaluations(), 2);
  EXPECT_LT(copy.observation().schedule.kernels.size(), kernels);
  // And the original steps on as if the fork had never been.
  ASSERT_TRUE(env.step(0).is_ok());
  EXPECT_EQ(env.observation().turn, 1);
}

TEST(AgentEnv, InvalidActionsAreErrors) {
  Environment env = make_env();
  EXPECT_FALSE(env.step(0).is_ok()) << "step before reset";
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  const int n = static_cast<int>(env.observation().actions.size());
  for (int bad : {-1, n, n + 5}) {
    auto r = env.step(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("legal actions"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(env.observation().turn, 0);
  EXPECT_TRUE(env.step(0).is_ok());
}

TEST(AgentEnv, DisabledSkillsAreLeftOut) {
  Environment env = make_env({.disabled_skills = {"fuse_elementwise"}});
  ASSERT_TRUE(env.reset(task_from(kGemmGraph)).is_ok());
  EXPECT_EQ(first_action_of(env.observation(), "fuse_elementwise"), -1);
  EXPECT_NE(first_action_of(env.observation(), "tf32_contractions"), -1);
  Environment unknown = make_env({.disabled_skills = {"fuse_everything"}});
  auto r = unknown.reset(task_from(kGemmGraph));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("fuse_elementwise"), std::string::npos) << "lists the skills";
}

TEST(AgentCostModelEvaluator, BaselinesAndOutcomes) {
  Task task = task_from(kGemmGraph, "kernelbench");
  CostModelEvaluator ev;
  schedule::Schedule first = schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-4});
  auto e = ev.evaluate(task, first);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_TRUE(e->result.predicted);
  EXPECT_EQ(e->result.device, "cpu (roofline of NVIDIA H200)");
  EXPECT_EQ(e->result.outcome, sandbox::Outcome::kOk);
  EXPECT_DOUBLE_EQ(*e->result.t_eager, costmodel::program_cost(task.graph, first).seconds);
  EXPECT_DOUBLE_EQ(*e->result.t_candidate, *e->result.t_eager);
  EXPECT_LT(*e->result.t_compile, *e->result.t_eager) << "three pointwise kernels fuse into one";
  EXPECT_EQ(e->reward, 1);
  // TF32 under a 1e-4 tolerance: the precision cannot be verified correct.
  schedule::Schedule tf32 = first;
  tf32.precision = "tf32";
  auto wrong = ev.evaluate(task, tf32);
  ASSERT_TRUE(wrong.is_ok());
  EXPECT_EQ(wrong->result.outcome, sandbox::Outcome::kWrongAnswer);
  EXPECT_EQ(wrong->reward, -1);
  // A malformed schedule (a node in no kernel) does not build.
  schedule::Schedule broken = first;
  broken.kernels.pop_back();
  auto bad = ev.evaluate(task, broken);
  ASSERT_TRUE(bad.is_ok());
  EXPECT_EQ(bad->result.outcome, sandbox::Outcome::kCompileError);
  EXPECT_FALSE(bad->result.t_candidate.has_value());
}

TEST(AgentCostModelEvaluator, ACorrectionScalesEveryTimeBySchedule) {
  Task task = task_from(kGemmGraph, "cuda-agent");
  schedule::Schedule first = schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-2});
  // A correction that doubles every time (bias log10 2, no weight), and one that depends on a feature.
  costmodel::Correction twice;
  twice.feature_names = costmodel::feature_names();
  const size_t d = twice.feature_names.size();
  twice.mean.assign(d, 0.0);
  twice.scale.assign(d, 1.0);
  twice.weights.assign(d, 0.0);
  twice.bias = std::log10(2.0);
  CostModelEvaluator plain, doubled(twice);
  EXPECT_NE(doubled.name().find("learned correction"), std::string::npos) << doubled.name();
  auto a = plain.evaluate(task, first);
  auto b = doubled.evaluate(task, first);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NEAR(*b->result.t_candidate, 2 * *a->result.t_candidate, 1e-12);
  EXPECT_NEAR(*b->result.t_eager, 2 * *a->result.t_eager, 1e-12);
  EXPECT_NEAR(*b->result.t_compile, 2 * *a->result.t_compile, 1e-12);
  EXPECT_EQ(a->reward, b->reward);  // a common factor changes no ratio
  EXPECT_TRUE(b->result.predicted);
  // A feature-dependent correction gives each schedule its own factor, so ratios can change.
  costmodel::Correction by_feature = twice;
  by_feature.bias = 0;
  by_feature.weights[0] = 0.5;
  CostModelEvaluator shaped(by_feature);
  auto c = shaped.evaluate(task, first);
  ASSERT_TRUE(c.is_ok());
  const costmodel::ProgramCost cost = costmodel::program_cost(task.graph, first);
  const double expect =
      by_feature.corrected_seconds(cost.seconds, costmodel::candidate_features(task.graph, first, cost));
  EXPECT_DOUBLE_EQ(*c->result.t_candidate, expect);
}

TEST(AgentCostModelEvaluator, MilestoneFormulaAtFivePercent) {
  sandbox::EvalResult r;
  r.t_eager = 1.0;
  r.t_compile = 0.8;
  r.t_candidate = 0.96;
  EXPECT_EQ(milestone_reward_of_times(r), 1);
  r.t_candidate = 0.94;
  EXPECT_EQ(milestone_reward_of_times(r), 2);
  r.t_candidate = 0.76;
  EXPECT_EQ(milestone_reward_of_times(r), 2) << "0.76 is not below 0.95 * 0.8";
  r.t_candidate = 0.75;
  EXPECT_EQ(milestone_reward_of_times(r), 3);
  r.outcome = sandbox::Outcome::kWrongAnswer;
  EXPECT_EQ(milestone_reward_of_times(r), -1);
}

void expect_finite(const std::vector<float>& f, const std::string& what) {
  for (size_t i = 0; i < f.size(); ++i) EXPECT_TRUE(std::isfinite(f[i])) << what << "[" << i << "]";
}

TEST(AgentFeatures, FiniteAndOfConstantLength) {
  for (const Task& task : all_test_tasks()) {
    Environment env = make_env();
    ASSERT_TRUE(env.reset(task).is_ok());
    while (true) {
      const Observation& obs = env.observation();
      ASSERT_EQ(obs.state_features.size(), static_cast<size_t>(kStateDim));
      expect_finite(obs.state_features, task.name + " state");
      ASSERT_EQ(obs.action_features.size(), obs.actions.size());
      for (const auto& f : obs.action_features) {
        ASSERT_EQ(f.size(), static_cast<size_t>(kActionDim));
        expect_finite(f, task.name + " action");
      }
      if (env.done()) break;
      ASSERT_TRUE(env.step(0).is_ok());
    }
  }
}

TEST(AgentFeatures, SayWhatTheyMean) {
  Environment env = make_env();
  ASSERT_TRUE(env.reset(task_from(kChainGraph)).is_ok());
  const Observation& obs = env.observation();
  const auto& s = obs.state_features;
  EXPECT_FLOAT_EQ(s[kStateFamilies + static_cast<int>(ir::OpFamily::kBinary)], 2.0f / 3.0f);  // mul, add
  EXPECT_FLOAT_EQ(s[kStateFamilies + static_cast<int>(ir::OpFamily::kUnary)], 1.0f / 3.0f);   // relu
  EXPECT_FLOAT_EQ(s[kStateFusedFraction], 0.0f);
  EXPECT_FLOAT_EQ(s[kStatePrecision], 1.0f);
  EXPECT_FLOAT_EQ(s[kStateProtocol], 1.0f);
  EXPECT_FLOAT_EQ(s[kStateTolerance], 0.5f);
  EXPECT_FLOAT_EQ(s[kStateLastVsEager], 0.0f);
  EXPECT_GT(s[kStateLastVsCompile], 0.0f) << "the first schedule is slower than predicted torch.compile";
  EXPECT_FLOAT_EQ(s[kStateOutcome + static_cast<int>(sandbox::Outcome::kOk)], 1.0f);
  const auto& fuse = obs.action_features.front();
  int fuse_slot = -1;
  for (size_t i = 0; i < skills::all_skills().size(); ++i)
    if (skills::all_skills()[i].name == "fuse_elementwise") fuse_slot = static_cast<int>(i);
  ASSERT_GE(fuse_slot, 0);
  EXPECT_FLOAT_EQ(fuse[kActionSkill + fuse_slot], 1.0f);  // the one-hot slot of fuse_elementwise
  EXPECT_LT(fuse[kActionCostChange], 0.0f) << "fusing saves a launch and a round trip";
  EXPECT_FLOAT_EQ(fuse[kActionLogKernels], 0.25f * std::log2(3.0f));
  const auto& stop = obs.action_features.back();
  EXPECT_FLOAT_EQ(stop[kActionStop], 1.0f);
  EXPECT_FLOAT_EQ(stop[kActionCostChange], 0.0f);
  // After a fusion, two of three nodes share a kernel.
  ASSERT_TRUE(env.step(0).is_ok());
  EXPECT_FLOAT_EQ(env.observation().state_features[kStateFusedFraction], 2.0f / 3.0f);
  EXPECT_LT(env.observation().state_features[kStateLastVsEager], 0.0f);
}

}  // namespace
}  // namespace kforge::agent
