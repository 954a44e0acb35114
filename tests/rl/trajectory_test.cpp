// The rejection fine-tuning filter and trajectory storage.
#include "rl/trajectory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kforge::rl {
namespace {

Trajectory make(double reward, std::vector<std::string> schedules, std::vector<std::string> outcomes) {
  Trajectory t;
  t.task = "toy";
  t.reward = reward;
  for (size_t i = 0; i < schedules.size(); ++i) {
    t.decisions.push_back(Decision{{static_cast<float>(i)}, {{0}, {1}}, static_cast<int>(i % 2)});
    t.action_names.push_back("a" + std::to_string(i));
  }
  t.schedules = std::move(schedules);
  t.outcomes = std::move(outcomes);
  return t;
}

TEST(RftFilter, KeepsPositiveEpisodesDropsLoopsAndInvalidActions) {
  // Schedules A B C B D: decisions 1 and 2 went B -> C -> B (a loop); decision 3's step failed.
  std::vector<Trajectory> ts = {
      make(2, {"A", "B", "C", "B", "D"}, {"ok", "ok", "ok", "compile_error", ""}),
      make(-1, {"A", "B"}, {"ok", "ok"}),
  };
  RftFilterStats stats;
  auto kept = rft_filter(ts, &stats);
  EXPECT_EQ(stats.episodes, 2);
  EXPECT_EQ(stats.kept_episodes, 1);
  EXPECT_EQ(stats.decisions, 7);
  EXPECT_EQ(stats.dropped_loops, 2);
  EXPECT_EQ(stats.dropped_invalid, 1);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0], &ts[0].decisions[0]);
  EXPECT_EQ(kept[1], &ts[0].decisions[4]);
}

TEST(RftFilter, ZeroRewardIsNotKept) {
  auto kept = rft_filter({make(0, {"A"}, {"ok"})}, nullptr);
  EXPECT_TRUE(kept.empty());
}

TEST(Trajectories, JsonlRoundTripAndTornLastLine) {
  auto path = std::filesystem::temp_directory_path() / ("kforge_rl_traj_" + std::to_string(::getpid()) + ".jsonl");
  Trajectory t = make(3, {"A", "B"}, {"ok", "ok"});
  t.seed = 42;
  t.faster_than_compile = true;
  t.evaluations = 3;
  std::string line = trajectory_to_json(t).dump() + "\n";
  {
    std::ofstream out(path, std::ios::binary);
    out << line << line.substr(0, line.size() / 2);
  }
  int64_t complete = 0;
  auto read = read_trajectories(path.string(), &complete);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(complete, static_cast<int64_t>(line.size()));
  const Trajectory& r = (*read)[0];
  EXPECT_EQ(r.seed, 42u);
  EXPECT_EQ(r.reward, 3);
  EXPECT_TRUE(r.faster_than_compile);
  EXPECT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[1].chosen, 1);
  EXPECT_EQ(r.schedules[1], "B");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kforge::rl
