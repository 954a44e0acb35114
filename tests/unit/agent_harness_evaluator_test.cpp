// The agent's GPU evaluator against a stand-in harness worker (no GPU here): a real codegen + nvcc
// build of one tiny problem, then verify + profile requests whose answers the test chooses. Checks
// measured (not predicted) results, rewards, build reuse, restarts after a crash and the measurement db.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "agent/env.h"
#include "agent/evaluator_factory.h"
#include "agent/harness_evaluator.h"
#include "agent/tasks.h"
#include "agent_test_graphs.h"
#include "base/files.h"
#include "sandbox/candidate.h"
#include "sandbox/device.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::agent {
namespace {

namespace fs = std::filesystem;

// Shipped with kforge (tests/problems): the tests run on a clone with no sibling ../shared folder.
const fs::path kReLU = fs::path(KFORGE_SOURCE_DIR) / "tests" / "problems" / "level1" / "19_ReLU.py";

// A stand-in for `python3 -m kforge.harness --serve`: logs each request to $FAKE_DIR/requests.jsonl and
// answers as $FAKE_DIR/mode says (ok, wrong, crash, oom: out of GPU memory every time, or oom-once: out
// of memory in the first process only, as when earlier candidates left the memory taken).
const char* kFakeHarness = R"(#!/usr/bin/env python3
import json, os, sys
d = os.environ["FAKE_DIR"]
for line in sys.stdin:
    req = json.loads(line)
    with open(os.path.join(d, "requests.jsonl"), "a") as f:
        f.write(json.dumps(req) + "\n")
    mode = open(os.path.join(d, "mode")).read().strip()
    if mode == "crash":
        os._exit(3)
    if mode == "oom-once" and not os.path.exists(os.path.join(d, "oom-done")):
        open(os.path.join(d, "oom-done"), "w").close()
        mode = "oom"
    if mode == "oom":
        ans = {"outcome": "resource_exhausted", "message": "CUDA out of memory. Tried to allocate 16.00 GiB"}
    elif mode == "wrong":
        ans = {"outcome": "wrong_answer", "message": "seed 1000: output 0 differs", "max_abs_err": 1.0}
    else:
        ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
        if req["profile"]:
            ans.update(t_candidate=0.001, t_eager=0.002, t_compile=0.0025, samples=req["trials"])
    print(json.dumps(ans), flush=True)
)";

class HarnessEvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = kforge::testing::temp_dir("harness-evaluator");
    std::ofstream(dir_ / "fake_harness.py") << kFakeHarness;
    ::chmod((dir_ / "fake_harness.py").c_str(), 0755);
    set_mode("ok");
  }
  void set_mode(const std::string& mode) { std::ofstream(dir_ / "mode") << mode << "\n"; }
  HarnessEvaluatorOptions options(costmodel::MeasurementDb* db = nullptr) {
    HarnessEvaluatorOptions o;
    o.work_dir = dir_ / "work";
    o.trials = 3;
    o.jobs = 2;
    o.db = db;
    o.commit = "test";
    o.harness.python = (dir_ / "fake_harness.py").string();
    o.harness.extra_env = {"FAKE_DIR=" + dir_.string()};
    o.harness.isolation = "none";
    o.harness.start_timeout_seconds = 0;
    return o;
  }
  std::vector<Json> requests() {
    std::vector<Json> out;
    auto text = read_file(dir_ / "requests.jsonl");
    if (!text.is_ok()) return out;
    size_t start = 0;
    while (start < text->size()) {
      size_t end = text->find('\n', start);
      out.push_back(Json::parse(text->substr(start, end - start)));
      start = end + 1;
    }
    return out;
  }
  // 19_ReLU through the importer; false (and the test skipped) without the problem or torch.
  bool load_relu(Task* task) {
    if (!fs::exists(kReLU)) return false;
    auto set = load_tasks({kReLU.string()}, {.protocol = "cuda-agent", .cache_dir = (dir_ / "graphs").string()});
    if (!set.is_ok() && set.status().message().find("PyTorch") != std::string::npos) return false;
    EXPECT_TRUE(set.is_ok()) << set.status().message();
    if (!set.is_ok() || set->tasks.size() != 1) return false;
    *task = set->tasks.front();
    return true;
  }
  static schedule::Schedule first_schedule(const Task& task) {
    return schedule::plan_one_kernel_per_op(task.graph, {.precision = "fp32", .tolerance = 1e-2});
  }
  fs::path dir_;
};

TEST_F(HarnessEvaluatorTest, ATaskWithoutAProblemFileIsAStatusError) {
  HarnessEvaluator evaluator(options());
  Task task = testing::task_from(testing::kChainGraph);
  auto e = evaluator.evaluate(task, first_schedule(task));
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("no problem file"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("--device cpu"), std::string::npos);
  EXPECT_EQ(evaluator.builds(), 0);
  EXPECT_TRUE(requests().empty());
}

TEST_F(HarnessEvaluatorTest, AMalformedScheduleIsACompileErrorWithoutABuild) {
  Task task;
  if (!load_relu(&task)) GTEST_SKIP() << "needs " << kReLU << " and a python with torch";
  HarnessEvaluator evaluator(options());
  schedule::Schedule s = first_schedule(task);
  s.kernels.clear();
  auto e = evaluator.evaluate(task, s);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_EQ(e->result.outcome, sandbox::Outcome::kCompileError);
  EXPECT_FALSE(e->result.predicted);
  EXPECT_EQ(e->reward, -1);
  EXPECT_EQ(evaluator.builds(), 0);
  EXPECT_TRUE(requests().empty());
}

TEST_F(HarnessEvaluatorTest, MeasuresThroughTheHarnessAndBuildsEachScheduleOnce) {
  Task task;
  if (!load_relu(&task)) GTEST_SKIP() << "needs " << kReLU << " and a python with torch";
  auto db = costmodel::MeasurementDb::open((dir_ / "measurements.sqlite").string());
  ASSERT_TRUE(db.is_ok()) << db.status().message();
  HarnessEvaluator evaluator(options(db->get()));
  EXPECT_TRUE(evaluator.measured());
  const schedule::Schedule s = first_schedule(task);
  const fs::path candidate = evaluator.candidate_dir(task, s);
  EXPECT_EQ(candidate.parent_path().parent_path(), dir_ / "work");

  auto first = evaluator.evaluate(task, s);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first->result.outcome, sandbox::Outcome::kOk) << first->result.message;
  EXPECT_FALSE(first->result.predicted);
  EXPECT_EQ(first->result.device, "Stand-in GPU");
  EXPECT_EQ(first->result.samples, 3);
  EXPECT_EQ(first->reward, 3);  // 1 ms against eager 2 ms and torch.compile 2.5 ms
  EXPECT_TRUE(fs::exists(candidate / "model_new.py"));
  EXPECT_TRUE(fs::exists(candidate / sandbox::library_file_name(task.graph.name)));

  // The same schedule again: measured again, not built again.
  auto again = evaluator.evaluate(task, s);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again->result.outcome, sandbox::Outcome::kOk);
  EXPECT_EQ(evaluator.builds(), 1);
  EXPECT_EQ(evaluator.harness_requests(), 2);

  // A wrong answer is an outcome with reward -1, and still no rebuild.
  set_mode("wrong");
  auto wrong = evaluator.evaluate(task, s);
  ASSERT_TRUE(wrong.is_ok()) << wrong.status().message();
  EXPECT_EQ(wrong->result.outcome, sandbox::Outcome::kWrongAnswer);
  EXPECT_FALSE(wrong->result.predicted);
  EXPECT_EQ(wrong->reward, -1);
  EXPECT_EQ(evaluator.builds(), 1);

  // A worker that dies is a runtime fault; the next evaluation gets a fresh worker.
  set_mode("crash");
  auto crashed = evaluator.evaluate(task, s);
  ASSERT_TRUE(crashed.is_ok()) << crashed.status().message();
  EXPECT_EQ(crashed->result.outcome, sandbox::Outcome::kRuntimeFault);
  EXPECT_EQ(crashed->reward, -1);
  set_mode("ok");
  auto recovered = evaluator.evaluate(task, s);
  ASSERT_TRUE(recovered.is_ok()) << recovered.status().message();
  EXPECT_EQ(recovered->result.outcome, sandbox::Outcome::kOk);
  EXPECT_EQ(evaluator.worker_starts(), 2);
  EXPECT_EQ(evaluator.builds(), 1);

  const std::vector<Json> seen = requests();
  ASSERT_EQ(seen.size(), 5u);
  for (const Json& r : seen) {
    EXPECT_TRUE(r["verify"].get<bool>());
    EXPECT_TRUE(r["profile"].get<bool>());
    EXPECT_EQ(r["trials"].get<int>(), 3);
    EXPECT_EQ(r["protocol"]["name"].get<std::string>(), "cuda-agent");
    EXPECT_EQ(fs::path(r["problem"].get<std::string>()), fs::absolute(task.source));
    EXPECT_EQ(fs::path(r["candidate"].get<std::string>()), fs::absolute(candidate / "model_new.py"));
  }

  // Every correct measurement went to the database; the same candidate measured again replaced its row.
  auto rows = (*db)->all();
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().problem, task.name);
  EXPECT_EQ(rows->front().device, "Stand-in GPU");
  EXPECT_EQ(rows->front().measured_seconds, 0.001);
  EXPECT_EQ(rows->front().schedule_hash, candidate.filename().string());
  EXPECT_EQ(rows->front().features.size(), costmodel::feature_names().size());
}

TEST_F(HarnessEvaluatorTest, OutOfMemoryIsMeasuredOnceMoreInAFreshHarness) {
  Task task;
  if (!load_relu(&task)) GTEST_SKIP() << "needs " << kReLU << " and a python with torch";
  HarnessEvaluator evaluator(options());
  const schedule::Schedule s = first_schedule(task);
  // Memory taken by what ran before: the fresh worker's answer stands, and says what happened.
  set_mode("oom-once");
  auto recovered = evaluator.evaluate(task, s);
  ASSERT_TRUE(recovered.is_ok()) << recovered.status().message();
  EXPECT_EQ(recovered->result.outcome, sandbox::Outcome::kOk) << recovered->result.message;
  EXPECT_NE(recovered->result.message.find("fresh harness"), std::string::npos) << recovered->result.message;
  EXPECT_EQ(evaluator.harness_requests(), 2);
  EXPECT_EQ(evaluator.worker_starts(), 2);
  // A candidate that runs out of memory in a fresh worker too: that is its outcome.
  set_mode("oom");
  auto exhausted = evaluator.evaluate(task, s);
  ASSERT_TRUE(exhausted.is_ok()) << exhausted.status().message();
  EXPECT_EQ(exhausted->result.outcome, sandbox::Outcome::kResourceExhausted);
  EXPECT_EQ(exhausted->reward, -1);
  EXPECT_EQ(evaluator.harness_requests(), 4);
  EXPECT_EQ(evaluator.worker_starts(), 3);
  EXPECT_EQ(requests().size(), 4u);
}

TEST_F(HarnessEvaluatorTest, PrebuildBuildsEachScheduleOnceInParallelAndEvaluateFindsThemBuilt) {
  Task task;
  if (!load_relu(&task)) GTEST_SKIP() << "needs " << kReLU << " and a python with torch";
  HarnessEvaluatorOptions o = options();
  o.compile_baseline = false;
  HarnessEvaluator evaluator(o);
  const schedule::Schedule a = first_schedule(task);
  schedule::Schedule b = a;
  b.kernels.front().knobs[schedule::Knob::kBlock] = 128;
  schedule::Schedule broken = a;
  broken.kernels.clear();
  ASSERT_NE(evaluator.candidate_dir(task, a), evaluator.candidate_dir(task, b));
  int last_done = 0, last_total = 0;
  Status st = evaluator.prebuild({{&task, a}, {&task, b}, {&task, a}, {&task, broken}}, 3, [&](int done, int total) {
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(last_total, 3);          // the repeated schedule is built once
  EXPECT_EQ(evaluator.builds(), 2);  // the malformed one is refused before nvcc
  for (const auto& s : {a, b}) {
    EXPECT_TRUE(fs::exists(evaluator.candidate_dir(task, s) / sandbox::library_file_name(task.graph.name)));
  }
  // Evaluating them builds nothing more; the broken one is a compile error without a request.
  for (const auto& s : {a, b}) {
    auto e = evaluator.evaluate(task, s);
    ASSERT_TRUE(e.is_ok()) << e.status().message();
    EXPECT_EQ(e->result.outcome, sandbox::Outcome::kOk) << e->result.message;
  }
  auto e = evaluator.evaluate(task, broken);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_EQ(e->result.outcome, sandbox::Outcome::kCompileError);
  EXPECT_EQ(evaluator.builds(), 2);
  EXPECT_TRUE(evaluator.prebuild({{&task, a}}, 2, {}).is_ok());  // built already: nothing to do
  EXPECT_EQ(evaluator.builds(), 2);
  const std::vector<Json> seen = requests();
  ASSERT_EQ(seen.size(), 2u);
  for (const Json& r : seen) {  // compile_baseline = false reaches the worker: no compiled baseline is timed
    EXPECT_EQ(r["timing"]["baselines"], Json::array({"eager"})) << r.dump();
    EXPECT_EQ(r["protocol"]["atol"].get<double>(), 1e-2);  // the whole protocol travels in the request
  }
}

TEST_F(HarnessEvaluatorTest, AnEpisodeIsJudgedByMeasurements) {
  Task task;
  if (!load_relu(&task)) GTEST_SKIP() << "needs " << kReLU << " and a python with torch";
  auto evaluator = std::make_shared<HarnessEvaluator>(options());
  Environment env(evaluator, {.max_turns = 4});
  auto obs = env.reset(task);
  ASSERT_TRUE(obs.is_ok()) << obs.status().message();
  EXPECT_FALSE(obs->last.result.predicted);
  EXPECT_EQ(obs->last.result.device, "Stand-in GPU");
  EXPECT_EQ(obs->last.reward, 3);
  EXPECT_EQ(env.episode_reward(), 3);
  EXPECT_EQ(evaluator->harness_requests(), 1);
}

TEST(EvaluatorFactory, PicksTheEvaluatorOfTheDevice) {
  auto cpu = make_evaluator("cpu", {});
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
  EXPECT_FALSE((*cpu)->measured());
  EXPECT_EQ((*cpu)->name(), "cost model (predicted)");
  auto bad = make_evaluator("tpu", {});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("auto, cpu or cuda"), std::string::npos);

  const char* had = std::getenv("KFORGE_ASSUME_GPU");
  const std::string saved = had ? had : "";
  ::setenv("KFORGE_ASSUME_GPU", "1", 1);
  auto cuda = make_evaluator("cuda", {.work_dir = kforge::testing::temp_dir("factory")});
  auto gpu_auto = make_evaluator("auto", {.work_dir = kforge::testing::temp_dir("factory")});
  auto no_dir = make_evaluator("cuda", {});
  ::unsetenv("KFORGE_ASSUME_GPU");
  auto cpu_auto = sandbox::gpu_present() ? nullptr : make_evaluator("auto", {}).value();
  if (had) ::setenv("KFORGE_ASSUME_GPU", saved.c_str(), 1);
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().message();
  EXPECT_TRUE((*cuda)->measured());
  EXPECT_NE(dynamic_cast<HarnessEvaluator*>(cuda->get()), nullptr);
  ASSERT_TRUE(gpu_auto.is_ok());
  EXPECT_TRUE((*gpu_auto)->measured());
  EXPECT_FALSE(no_dir.is_ok());
  if (cpu_auto) {
    EXPECT_FALSE(cpu_auto->measured());
  }
}

}  // namespace
}  // namespace kforge::agent
