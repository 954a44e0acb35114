// Recorded evaluations and their replay (agent/evaluation_log.h): what exhaustive search records is
// what every policy finds again in replay; a state never recorded is an error, not a guess.
#include <gtest/gtest.h>

#include <fstream>

#include "agent/cost_model_evaluator.h"
#include "agent/evaluation_log.h"
#include "agent/policy.h"
#include "agent_test_graphs.h"
#include "base/files.h"
#include "schedule/planner.h"

namespace kforge::agent {
namespace {

namespace fs = std::filesystem;

// Counts the evaluations it forwards.
class CountingEvaluator : public Evaluator {
 public:
  explicit CountingEvaluator(std::shared_ptr<Evaluator> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override {
    ++calls;
    return inner_->evaluate(task, s);
  }
  int calls = 0;

 private:
  std::shared_ptr<Evaluator> inner_;
};

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(EvaluationLog, EveryPolicyReplaysWhatExhaustiveSearchRecorded) {
  const fs::path dir = kforge::testing::temp_dir("evaluation-log");
  const fs::path log_path = dir / "log.jsonl";
  const std::vector<Task> tasks = testing::all_test_tasks();
  auto cost = std::make_shared<CostModelEvaluator>();
  int states = 0;
  {
    auto recorder = RecordingEvaluator::open(cost, log_path);
    ASSERT_TRUE(recorder.is_ok()) << recorder.status().message();
    for (const Task& t : tasks) {
      Environment env(*recorder);
      auto exhaustive = make_exhaustive_policy();
      auto ep = run_episode(env, *exhaustive, t, 0);
      ASSERT_TRUE(ep.is_ok()) << ep.status().message();
      states += ep->evaluations;
      ASSERT_TRUE((*recorder)->append({{"task_done", t.name}, {"protocol", t.protocol}, {"capped", false}}).is_ok());
    }
  }
  EXPECT_GT(states, static_cast<int>(tasks.size()));  // the test graphs have choices
  EXPECT_EQ(lines_of(log_path).size(), static_cast<size_t>(states) + tasks.size());

  auto log = read_evaluation_logs({log_path.string()});
  ASSERT_TRUE(log.is_ok()) << log.status().message();
  EXPECT_EQ(log->tasks_done.size(), tasks.size());
  EXPECT_FALSE(log->measured);  // cost-model predictions, and the replay says so
  auto replay = std::make_shared<ReplayEvaluator>(std::move(log).value(), log_path.string());
  EXPECT_NE(replay->name().find("replayed predictions"), std::string::npos) << replay->name();

  // Every policy, on every task, finds each state it visits in the log, with the recorded result; the
  // same episodes on the live evaluator make the same choices.
  std::vector<std::unique_ptr<Policy>> policies;
  policies.push_back(make_heuristic_policy());
  policies.push_back(make_random_policy());
  policies.push_back(make_search_policy());
  policies.push_back(make_exhaustive_policy());
  for (auto& policy : policies) {
    for (const Task& t : tasks) {
      auto counted = std::make_shared<CountingEvaluator>(replay);
      Environment replayed(counted), live(cost);
      auto a = run_episode(replayed, *policy, t, 7);
      ASSERT_TRUE(a.is_ok()) << policy->name() << " on " << t.name << ": " << a.status().message();
      auto b = run_episode(live, *policy, t, 7);
      ASSERT_TRUE(b.is_ok()) << b.status().message();
      EXPECT_EQ(a->reward, b->reward) << policy->name() << " on " << t.name;
      EXPECT_EQ(a->evaluations, b->evaluations) << policy->name() << " on " << t.name;
      EXPECT_EQ(a->evaluations, counted->calls);
      EXPECT_EQ(schedule_state_key(t.graph, a->best), schedule_state_key(t.graph, b->best));
    }
  }
}

TEST(EvaluationLog, AStateNeverRecordedIsAnErrorThatSaysWhatToRun) {
  const fs::path dir = kforge::testing::temp_dir("evaluation-log-missing");
  const Task task = testing::task_from(testing::kChainGraph);
  const schedule::Schedule first =
      schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-2});
  {
    auto recorder = RecordingEvaluator::open(std::make_shared<CostModelEvaluator>(), dir / "log.jsonl");
    ASSERT_TRUE(recorder.is_ok());
    ASSERT_TRUE((*recorder)->evaluate(task, first).is_ok());
  }
  auto log = read_evaluation_logs({(dir / "log.jsonl").string()});
  ASSERT_TRUE(log.is_ok()) << log.status().message();
  ReplayEvaluator replay(std::move(log).value(), "log.jsonl");
  auto same = replay.evaluate(task, first);
  ASSERT_TRUE(same.is_ok()) << same.status().message();
  EXPECT_EQ(same->result.outcome, sandbox::Outcome::kOk);
  EXPECT_TRUE(same->result.predicted);

  schedule::Schedule other = first;
  other.kernels.front().knobs["block"] = 128;
  auto missing = replay.evaluate(task, other);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("kforge explore"), std::string::npos) << missing.status().message();

  // The same schedule under the other protocol is another task.
  Task strict = task;
  strict.protocol = "kernelbench";
  EXPECT_FALSE(replay.evaluate(strict, first).is_ok());
}

TEST(EvaluationLog, AMalformedLineNamesItsFileAndLine) {
  const fs::path dir = kforge::testing::temp_dir("evaluation-log-bad");
  std::ofstream(dir / "bad.jsonl") << "{\"task_done\": \"a\", \"protocol\": \"cuda-agent\"}\n{\"task\": \"a\"}\n";
  auto log = read_evaluation_logs({(dir / "bad.jsonl").string()});
  ASSERT_FALSE(log.is_ok());
  EXPECT_NE(log.status().message().find("bad.jsonl:2"), std::string::npos) << log.status().message();
  auto none = read_evaluation_logs({(dir / "absent.jsonl").string()});
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("kforge explore --record"), std::string::npos);
}

}  // namespace
}  // namespace kforge::agent
