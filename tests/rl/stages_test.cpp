// The training stages on the real environment (cost model) with tiny sizes: order, resume after a
// stop, metrics lines, determinism.
#include "rl/stages.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/cost_model_evaluator.h"
#include "agent/features.h"
#include "agent_test_graphs.h"
#include "base/files.h"
#include "rl/networks.h"
#include "rl/trajectory.h"

namespace kforge::rl {
namespace {

namespace fs = std::filesystem;

Preset tiny_preset() {
  Preset p = ci_preset();
  p.hidden = 16;
  p.train_turns = 6;
  p.warmup_iterations = 2;
  p.warmup_plans = 4;
  p.warmup_plan_turns = 4;
  p.collect_episodes = 6;
  p.rft_epochs = 2;
  p.value_rounds = 2;
  p.value_epochs = 2;
  p.ppo_iterations = 2;
  p.ppo_episodes = 3;
  p.ppo.minibatch = 8;
  return p;
}

StageContext context(const fs::path& out, uint64_t seed = 5) {
  StageContext c;
  c.preset = tiny_preset();
  c.train = agent::testing::all_test_tasks();
  c.evaluator = std::make_shared<agent::CostModelEvaluator>();
  c.out = out;
  c.seed = seed;
  return c;
}

// (stage, iteration) of every metrics line.
std::vector<std::pair<std::string, int>> metric_lines(const fs::path& out) {
  std::vector<std::pair<std::string, int>> lines;
  std::ifstream in(metrics_path(out));
  std::string line;
  while (std::getline(in, line)) {
    auto j = parse_json(line, "metrics");
    EXPECT_TRUE(j.is_ok());
    lines.emplace_back((*j)["stage"].get<std::string>(), (*j)["iteration"].get<int>());
    for (const char* key : {"mean_reward", "pass_rate", "faster_than_compile_rate", "turns_per_episode"}) {
      EXPECT_TRUE(j->contains(key)) << key << " missing in " << line;
    }
  }
  return lines;
}

TEST(Stages, ResumeContinuesTheIterationCount) {
  fs::path out = kforge::testing::temp_dir("rl-resume");
  StageContext c = context(out);
  auto first = run_stage("warmup", c);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  auto ckpt = ActorCritic::load(checkpoint_path(out, "warmup").string());
  ASSERT_TRUE(ckpt.is_ok());
  EXPECT_EQ(ckpt->counters.stage, "warmup");
  EXPECT_EQ(ckpt->counters.iteration, 2);
  // A kill after an iteration's metrics but before its checkpoint leaves a line the resume drops.
  {
    std::ofstream(metrics_path(out), std::ios::app) << R"({"stage":"warmup","iteration":2,"mean_reward":0})"
                                                    << "\n";
  }
  c.preset.warmup_iterations = 4;
  auto second = run_stage("warmup", c);
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  EXPECT_EQ((*second)["iteration"].get<int>(), 3);
  EXPECT_EQ(ActorCritic::load(checkpoint_path(out, "warmup").string())->counters.iteration, 4);
  std::vector<std::pair<std::string, int>> want = {{"warmup", 0}, {"warmup", 1}, {"warmup", 2}, {"warmup", 3}};
  EXPECT_EQ(metric_lines(out), want);
  // A finished stage returns at once and writes nothing.
  auto again = run_stage("warmup", c);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(metric_lines(out).size(), 4u);
  fs::remove_all(out);
}

TEST(Stages, AllStagesInOrderWithATornTrajectoryFile) {
  fs::path out = kforge::testing::temp_dir("rl-all");
  StageContext c = context(out);
  ASSERT_TRUE(run_stage("warmup", c).is_ok());
  // Collect half, then a torn line as a kill mid-write leaves it.
  c.preset.collect_episodes = 3;
  ASSERT_TRUE(run_stage("collect", c).is_ok());
  { std::ofstream(trajectories_path(out), std::ios::app) << R"({"task": "chain", "se)"; }
  c.preset.collect_episodes = 6;
  auto collected = run_stage("collect", c);
  ASSERT_TRUE(collected.is_ok()) << collected.status().message();
  auto ts = read_trajectories(trajectories_path(out).string());
  ASSERT_TRUE(ts.is_ok()) << ts.status().message();
  EXPECT_EQ(ts->size(), 6u);
  for (const auto& t : *ts) {
    EXPECT_EQ(t.schedules.size(), t.decisions.size());
    ASSERT_FALSE(t.decisions.empty());
    EXPECT_EQ(static_cast<int>(t.decisions[0].state.size()), agent::kStateDim);
  }
  for (const char* stage : {"rft", "value", "ppo"}) {
    auto r = run_stage(stage, c);
    ASSERT_TRUE(r.is_ok()) << stage << ": " << r.status().message();
    EXPECT_TRUE(fs::exists(checkpoint_path(out, stage))) << stage;
  }
  auto lines = metric_lines(out);
  std::vector<std::string> stages;
  for (const auto& [s, i] : lines) stages.push_back(s);
  std::vector<std::string> want = {"warmup", "warmup", "collect", "rft", "rft", "value", "value", "ppo", "ppo"};
  EXPECT_EQ(stages, want);
  fs::remove_all(out);
}

TEST(Stages, LaterStageWithoutEarlierSaysWhatToRun) {
  fs::path out = kforge::testing::temp_dir("rl-order");
  StageContext c = context(out);
  auto r = run_stage("collect", c);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--stage warmup"), std::string::npos) << r.status().message();
  auto v = run_stage("value", c);
  EXPECT_NE(v.status().message().find("--stage collect"), std::string::npos) << v.status().message();
  EXPECT_EQ(run_stage("bogus", c).status().code(), ErrorCode::kInvalidArgument);
  fs::remove_all(out);
}

TEST(Stages, SameSeedSameCheckpoint) {
  fs::path a = kforge::testing::temp_dir("rl-seed-a"), b = kforge::testing::temp_dir("rl-seed-b");
  ASSERT_TRUE(run_stage("warmup", context(a, 9)).is_ok());
  ASSERT_TRUE(run_stage("warmup", context(b, 9)).is_ok());
  auto na = ActorCritic::load(checkpoint_path(a, "warmup").string());
  auto nb = ActorCritic::load(checkpoint_path(b, "warmup").string());
  ASSERT_TRUE(na.is_ok() && nb.is_ok());
  std::vector<float> s(agent::kStateDim, 0.1f);
  std::vector<std::vector<float>> acts(3, std::vector<float>(agent::kActionDim, 0.0f));
  acts[1][0] = 1;
  EXPECT_EQ(na->log_probs(s, acts), nb->log_probs(s, acts));
  EXPECT_EQ(na->value(s), nb->value(s));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(DeriveSeed, DependsOnEveryPart) {
  EXPECT_EQ(derive_seed(1, "ppo", 3), derive_seed(1, "ppo", 3));
  EXPECT_NE(derive_seed(1, "ppo", 3), derive_seed(2, "ppo", 3));
  EXPECT_NE(derive_seed(1, "ppo", 3), derive_seed(1, "rft", 3));
  EXPECT_NE(derive_seed(1, "ppo", 3), derive_seed(1, "ppo", 4));
}

}  // namespace
}  // namespace kforge::rl
