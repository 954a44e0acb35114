// Recorded evaluations and their replay (agent/evaluation_log.h): what exhaustive search records is
// what every policy finds again in replay; a program never recorded is an error, not a guess; the
// states that build one program share its evaluation.
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
  other.kernels.front().knobs[schedule::Knob::kBlock] = 128;
  auto missing = replay.evaluate(task, other);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("kforge explore"), std::string::npos) << missing.status().message();

  // The same schedule under the other protocol is another task.
  Task strict = task;
  strict.protocol = "kernelbench";
  EXPECT_FALSE(replay.evaluate(strict, first).is_ok());
}

TEST(EvaluationLog, StatesThatBuildTheSameProgramShareOneEvaluation) {
  const fs::path dir = kforge::testing::temp_dir("evaluation-log-program");
  const Task task = testing::task_from(testing::kChainGraph);
  const schedule::Schedule first =
      schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-2});
  schedule::Schedule same_kernels = first;  // another way there: only the skills applied differ
  same_kernels.applied = {"tune_block"};
  schedule::Schedule other = first;
  other.kernels.front().knobs[schedule::Knob::kBlock] = 128;
  EXPECT_EQ(schedule::program_hash(task.graph, first), schedule::program_hash(task.graph, same_kernels));
  EXPECT_NE(schedule::program_hash(task.graph, first), schedule::program_hash(task.graph, other));
  EXPECT_NE(schedule_state_key(task.graph, first), schedule_state_key(task.graph, same_kernels));

  // Charged once: the cache forwards the program once, and counts both states.
  auto counted = std::make_shared<CountingEvaluator>(std::make_shared<CostModelEvaluator>());
  CachedEvaluator cached(counted);
  ASSERT_TRUE(cached.evaluate(task, first).is_ok());
  ASSERT_TRUE(cached.evaluate(task, same_kernels).is_ok());
  EXPECT_EQ(counted->calls, 1);
  EXPECT_EQ(cached.forwarded(), 1);
  EXPECT_EQ(cached.states(), 2);
  ASSERT_TRUE(cached.evaluate(task, other).is_ok());
  EXPECT_EQ(cached.forwarded(), 2);

  // A record names its program; a log written before that field is keyed by the program all the
  // same (computed from the recorded schedule), so either state finds it in replay.
  {
    auto recorder = RecordingEvaluator::open(std::make_shared<CostModelEvaluator>(), dir / "log.jsonl");
    ASSERT_TRUE(recorder.is_ok());
    ASSERT_TRUE((*recorder)->evaluate(task, same_kernels).is_ok());
  }
  auto line = parse_json(lines_of(dir / "log.jsonl").at(0), "log");
  ASSERT_TRUE(line.is_ok());
  EXPECT_EQ(line->at("program").get<std::string>(), schedule::program_hash(task.graph, first));
  line->erase("program");
  std::ofstream(dir / "old.jsonl") << line->dump() << "\n";
  for (const char* name : {"log.jsonl", "old.jsonl"}) {
    auto log = read_evaluation_logs({(dir / name).string()});
    ASSERT_TRUE(log.is_ok()) << log.status().message();
    ReplayEvaluator replay(std::move(log).value(), name);
    EXPECT_TRUE(replay.evaluate(task, first).is_ok()) << name;
    EXPECT_TRUE(replay.evaluate(task, same_kernels).is_ok()) << name;
    EXPECT_FALSE(replay.evaluate(task, other).is_ok()) << name;
  }
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

// Issue #29: a log says which action space it was explored with; one of another (or none) is refused with
// both versions and the command that refreshes it; --reuse reads a log's lines per task and program.
TEST(EvaluationLog, TheHeaderNamesTheActionSpaceAndAStaleLogIsRefused) {
  const fs::path dir = kforge::testing::temp_dir("evaluation-log-version");
  const Task task = testing::task_from(testing::kChainGraph);
  const schedule::Schedule first =
      schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-2});
  {
    auto recorder = RecordingEvaluator::open(std::make_shared<CostModelEvaluator>(), dir / "log.jsonl");
    ASSERT_TRUE(recorder.is_ok());
    ASSERT_TRUE((*recorder)->append(evaluation_log_header()).is_ok());
    ASSERT_TRUE((*recorder)->evaluate(task, first).is_ok());
    ASSERT_TRUE(
        (*recorder)->append({{"task_done", task.name}, {"protocol", task.protocol}, {"capped", false}}).is_ok());
  }
  const std::vector<std::string> lines = lines_of(dir / "log.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  auto log = read_evaluation_logs({(dir / "log.jsonl").string()});
  ASSERT_TRUE(log.is_ok()) << log.status().message();
  ASSERT_EQ(log->versions.size(), 1u);
  EXPECT_EQ(log->versions[0].action_space, current_action_space());
  EXPECT_EQ(log->evaluations.size(), 1u);  // the header is not an evaluation
  EXPECT_TRUE(check_log_action_space(*log, "--replay").is_ok());

  // Without the header (a log from before): unknown, refused with the refresh command.
  std::ofstream(dir / "old.jsonl") << lines[1] << "\n" << lines[2] << "\n";
  auto old = read_evaluation_logs({(dir / "old.jsonl").string()});
  ASSERT_TRUE(old.is_ok()) << old.status().message();
  EXPECT_FALSE(old->versions[0].action_space.has_value());
  Status stale = check_log_action_space(*old, "--replay");
  ASSERT_FALSE(stale.is_ok());
  EXPECT_NE(stale.message().find("action space unknown"), std::string::npos) << stale.message();
  EXPECT_NE(stale.message().find("--reuse " + (dir / "old.jsonl").string()), std::string::npos) << stale.message();
  // Read together, the log of today's catalogue does not hide the stale one.
  auto both = read_evaluation_logs({(dir / "log.jsonl").string(), (dir / "old.jsonl").string()});
  ASSERT_TRUE(both.is_ok());
  EXPECT_FALSE(check_log_action_space(*both, "--replay").is_ok());

  // Per task and program, for --reuse: the evaluation line as written, and the task_done line.
  auto records = read_task_records({(dir / "log.jsonl").string()});
  ASSERT_TRUE(records.is_ok()) << records.status().message();
  ASSERT_EQ(records->size(), 1u);
  const TaskRecords& r = records->at(task_records_key(task.name, task.protocol));
  EXPECT_EQ(r.lines_by_program.at(schedule::program_hash(task.graph, first)), lines[1]);
  EXPECT_EQ(r.done_line, lines[2]);
  EXPECT_FALSE(r.capped);
}

}  // namespace
}  // namespace kforge::agent
