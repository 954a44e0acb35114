// Task sets: finding problem files, importing and caching them, user errors, the held-out split.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "agent/tasks.h"
#include "base/files.h"
#include "test_util.h"

namespace kforge::agent {
namespace {

namespace fs = std::filesystem;

const fs::path kLevel1 = fs::path(KFORGE_SOURCE_DIR) / ".." / "shared" / "kernelbench" / "level1";

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Loads `paths`, skipping the test when this machine's python has no torch.
TaskSet load_or_skip(const std::vector<std::string>& paths, const TaskLoadOptions& options, bool* skipped) {
  auto set = load_tasks(paths, options);
  *skipped = false;
  if (!set.is_ok() && set.status().message().find("PyTorch") != std::string::npos) {
    *skipped = true;
    return {};
  }
  EXPECT_TRUE(set.is_ok()) << set.status().message();
  return set.is_ok() ? std::move(set).value() : TaskSet{};
}

TEST(AgentTasks, ImportsASuiteAndADatasetThroughTheCache) {
  if (!fs::exists(kLevel1 / "19_ReLU.py")) GTEST_SKIP() << "no shared KernelBench at " << kLevel1;
  const fs::path root = kforge::testing::temp_dir("agent-tasks");
  // A suite with a level directory, and a synth-style dataset holding the same problem under another name.
  fs::create_directories(root / "suite" / "level1");
  fs::copy_file(kLevel1 / "19_ReLU.py", root / "suite" / "level1" / "19_ReLU.py");
  fs::copy_file(kLevel1 / "20_LeakyReLU.py", root / "suite" / "level1" / "20_LeakyReLU.py");
  fs::create_directories(root / "data" / "tasks");
  fs::copy_file(kLevel1 / "19_ReLU.py", root / "data" / "tasks" / "000001_Relu.py");
  ASSERT_TRUE(write_file(root / "data" / "index.jsonl", R"({"name": "Relu", "file": "tasks/000001_Relu.py"})"
                                                        "\n")
                  .is_ok());
  const auto data_before = listing(root / "data");

  TaskLoadOptions options;
  options.cache_dir = (root / "cache").string();
  std::vector<std::pair<int, int>> progress;
  options.progress = [&](int done, int total) { progress.emplace_back(done, total); };
  bool skipped = false;
  TaskSet set = load_or_skip({(root / "suite").string(), (root / "data").string()}, options, &skipped);
  if (skipped) GTEST_SKIP() << "python has no torch";
  ASSERT_EQ(set.tasks.size(), 3u);
  EXPECT_TRUE(set.skipped.empty());
  EXPECT_EQ(set.tasks[0].name, "level1/19_ReLU");
  EXPECT_EQ(set.tasks[1].name, "level1/20_LeakyReLU");
  EXPECT_EQ(set.tasks[2].name, "000001_Relu");
  EXPECT_EQ(set.tasks[2].source, (root / "data" / "tasks" / "000001_Relu.py").string());
  EXPECT_EQ(set.tasks[2].graph.name, "000001_Relu") << "the graph is named after its file, not the cache entry";
  EXPECT_EQ(set.tasks[0].graph.nodes().size(), 1u);
  EXPECT_EQ(set.tasks[0].protocol, "cuda-agent");
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back(), (std::pair<int, int>{3, 3}));
  EXPECT_EQ(listing(root / "data"), data_before) << "nothing is written into the dataset";
  // Two distinct sources: two cache entries (the dataset's copy of ReLU shares the suite's).
  EXPECT_EQ(listing(root / "cache").size(), 2u);

  // Again, with the limit: from the cache, in the same order.
  options.limit = 1;
  TaskSet again = load_or_skip({(root / "suite").string()}, options, &skipped);
  ASSERT_EQ(again.tasks.size(), 1u);
  EXPECT_EQ(again.tasks[0].name, "level1/19_ReLU");
  EXPECT_EQ(listing(root / "cache").size(), 2u);
  fs::remove_all(root);
}

TEST(AgentTasks, BadPathsSayWhatToGive) {
  const fs::path root = kforge::testing::temp_dir("agent-tasks-bad");
  auto missing = load_tasks({(root / "nowhere").string()}, {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find((root / "nowhere").string()), std::string::npos);
  EXPECT_NE(missing.status().message().find("kforge synth"), std::string::npos) << missing.status().message();

  fs::create_directories(root / "empty");
  auto empty = load_tasks({(root / "empty").string()}, {});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("no problem files"), std::string::npos) << empty.status().message();

  ASSERT_TRUE(write_file(root / "notes.txt", "hello\n").is_ok());
  auto text = load_tasks({(root / "notes.txt").string()}, {});
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("not a problem file"), std::string::npos) << text.status().message();

  TaskLoadOptions bad_protocol;
  bad_protocol.protocol = "fastest";
  EXPECT_FALSE(load_tasks({(root / "notes.txt").string()}, bad_protocol).is_ok());
  fs::remove_all(root);
}

std::vector<Task> named_tasks(int n) {
  std::vector<Task> tasks(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) tasks[static_cast<size_t>(i)].name = "task_" + std::to_string(i);
  return tasks;
}

std::set<std::string> names_of(const std::vector<Task>& tasks) {
  std::set<std::string> out;
  for (const auto& t : tasks) out.insert(t.name);
  return out;
}

TEST(AgentTasks, SplitIsDeterministicByName) {
  std::vector<Task> all = named_tasks(200);
  std::vector<Task> train, held;
  split_tasks(all, 0.2, &train, &held);
  EXPECT_EQ(train.size() + held.size(), all.size());
  EXPECT_GT(held.size(), 20u);
  EXPECT_LT(held.size(), 60u);
  // Same names in another order: the same split.
  std::vector<Task> reversed(all.rbegin(), all.rend());
  std::vector<Task> train2, held2;
  split_tasks(reversed, 0.2, &train2, &held2);
  EXPECT_EQ(names_of(held), names_of(held2));
  EXPECT_EQ(names_of(train), names_of(train2));
  // A task's side does not depend on the others.
  std::vector<Task> fewer(all.begin(), all.begin() + 100);
  std::vector<Task> train3, held3;
  split_tasks(fewer, 0.2, &train3, &held3);
  for (const auto& t : held3) EXPECT_TRUE(names_of(held).count(t.name)) << t.name;
}

TEST(AgentTasks, SplitHoldsOutAtLeastOneOfTwo) {
  for (double fraction : {0.01, 0.5, 0.99}) {
    std::vector<Task> train, held;
    split_tasks(named_tasks(2), fraction, &train, &held);
    EXPECT_EQ(held.size(), 1u) << fraction;
    EXPECT_EQ(train.size(), 1u) << fraction;
  }
  std::vector<Task> train, held;
  split_tasks(named_tasks(1), 0.5, &train, &held);
  EXPECT_EQ(train.size() + held.size(), 1u);
}

}  // namespace
}  // namespace kforge::agent
