// The harness supervisor against a stand-in worker (no GPU here): answers, hangs, crashes and
// garbage become outcomes; the worker is replaced after each, and the next request is answered.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "sandbox/harness.h"
#include "sandbox/metrics.h"
#include "test_util.h"

namespace kforge::sandbox {
namespace {

// A stand-in for `python3 -m kforge.harness --serve`: behaves as the candidate's file name says.
const char* kFakeWorker = R"(#!/usr/bin/env python3
import json, os, signal, sys, time
for line in sys.stdin:
    req = json.loads(line)
    name = os.path.basename(os.path.dirname(req["candidate"]))
    if name == "hang":
        time.sleep(60)
    if name == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if name == "garbage":
        print("this is not json", flush=True)
        continue
    if name == "scratch":  # the worker's own scratch must still be there to write into
        try:
            with open(os.path.join(os.environ["TMPDIR"], "probe"), "w") as f:
                f.write("x")
        except OSError as e:
            print(json.dumps({"outcome": "runtime_fault", "message": "scratch gone: %s" % e}), flush=True)
            continue
    if name == "fault":
        print(json.dumps({"outcome": "runtime_fault", "message": "CUDA error: an illegal memory access"}), flush=True)
        continue
    ans = {"outcome": "ok", "device": "Fake GPU", "torch": "0.0", "max_abs_err": 1e-6, "max_rel_err": 1e-5,
           "pid": os.getpid()}
    if req.get("profile"):
        ans.update(t_candidate=0.001, t_eager=0.002, t_compile=0.0012, samples=req["trials"])
    print(json.dumps(ans), flush=True)
    if name == "exit_after":
        sys.exit(0)
)";

class HarnessWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = kforge::testing::temp_dir("harness");
    script_ = dir_ / "fake_worker.py";
    std::ofstream(script_) << kFakeWorker;
    ::chmod(script_.c_str(), 0755);
  }
  EvalRequest request(const std::string& candidate, double timeout = 20) {
    EvalRequest r;
    r.problem = dir_ / "problem.py";
    r.candidate = dir_ / candidate / "model_new.py";
    r.timeout_seconds = timeout;
    return r;
  }
  HarnessOptions options() {
    HarnessOptions o;
    o.python = script_.string();
    o.start_timeout_seconds = 0;
    return o;
  }
  std::filesystem::path dir_, script_;
};

TEST_F(HarnessWorkerTest, AnswersAndKeepsTheWorker) {
  HarnessWorker w(options());
  auto a = w.evaluate(request("ok"));
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->outcome, Outcome::kOk);
  EXPECT_FALSE(a->predicted);
  EXPECT_EQ(a->device, "Fake GPU");
  ASSERT_TRUE(a->max_abs_err.has_value());
  auto req = request("ok");
  req.profile = true;
  req.trials = 7;
  auto b = w.evaluate(req);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->samples, 7);
  ASSERT_TRUE(b->t_candidate && b->t_eager && b->t_compile);
  EXPECT_EQ(milestone_reward(b.value()), 3);
  EXPECT_EQ(w.starts(), 1);
}

TEST_F(HarnessWorkerTest, WorkersSideBySideKeepTheirOwnScratch) {
  // bench runs several verify workers in one process: one replaced after a fault removes its own scratch,
  // never another's (they were named by pid and start count, and collided).
  HarnessWorker a(options()), b(options());
  ASSERT_EQ(a.evaluate(request("ok"))->outcome, Outcome::kOk);
  ASSERT_EQ(b.evaluate(request("scratch"))->outcome, Outcome::kOk);
  EXPECT_EQ(a.evaluate(request("fault"))->outcome, Outcome::kRuntimeFault);
  EXPECT_EQ(a.evaluate(request("ok"))->outcome, Outcome::kOk);  // a's worker replaced, its scratch removed
  auto r = b.evaluate(request("scratch"));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->outcome, Outcome::kOk) << r->message;
}

TEST_F(HarnessWorkerTest, HangBecomesTimeoutAndTheNextRequestGetsAFreshWorker) {
  HarnessWorker w(options());
  auto a = w.evaluate(request("hang", 1.0));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->outcome, Outcome::kTimeout);
  EXPECT_NE(a->message.find("no answer within"), std::string::npos) << a->message;
  auto b = w.evaluate(request("ok"));
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->outcome, Outcome::kOk);
  EXPECT_EQ(w.starts(), 2);
}

TEST_F(HarnessWorkerTest, CrashBecomesRuntimeFaultWithTheSignal) {
  HarnessWorker w(options());
  auto a = w.evaluate(request("crash"));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->outcome, Outcome::kRuntimeFault);
  EXPECT_NE(a->message.find("signal 11"), std::string::npos) << a->message;
  EXPECT_EQ(w.evaluate(request("ok"))->outcome, Outcome::kOk);
  EXPECT_EQ(w.starts(), 2);
}

TEST_F(HarnessWorkerTest, AFaultReplacesTheWorkerForACleanContext) {
  HarnessWorker w(options());
  EXPECT_EQ(w.evaluate(request("fault"))->outcome, Outcome::kRuntimeFault);
  EXPECT_EQ(w.evaluate(request("ok"))->outcome, Outcome::kOk);
  EXPECT_EQ(w.starts(), 2);
}

TEST_F(HarnessWorkerTest, AWorkerThatDiedAfterAnsweringIsReplacedNotBlamed) {
  HarnessWorker w(options());
  EXPECT_EQ(w.evaluate(request("exit_after"))->outcome, Outcome::kOk);
  ::usleep(200000);  // let it finish exiting
  auto b = w.evaluate(request("ok"));
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->outcome, Outcome::kOk) << b->message;
  EXPECT_EQ(w.starts(), 2);
}

TEST_F(HarnessWorkerTest, GarbageIsAFaultNotACrashOfKforge) {
  HarnessWorker w(options());
  auto a = w.evaluate(request("garbage"));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->outcome, Outcome::kRuntimeFault);
  EXPECT_NE(a->message.find("not valid JSON"), std::string::npos) << a->message;
  EXPECT_EQ(w.evaluate(request("ok"))->outcome, Outcome::kOk);
}

TEST_F(HarnessWorkerTest, AMissingPythonIsKforgesErrorNotTheCandidates) {
  HarnessOptions o = options();
  o.python = (dir_ / "no-such-python").string();
  HarnessWorker w(o);
  auto a = w.evaluate(request("ok"));
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("KFORGE_PYTHON"), std::string::npos) << a.status().message();
}

// A stand-in worker that tries what a hostile candidate would and reports what worked.
const char* kProbeWorker = R"(#!/usr/bin/env python3
import json, os, socket, sys
for line in sys.stdin:
    req = json.loads(line)
    probes = {}
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2).close()
        probes["network"] = "open"
    except OSError as e:
        probes["network"] = "refused"
    outside = os.path.join(os.path.dirname(os.path.dirname(req["candidate"])), "written_by_worker")
    try:
        open(outside, "w").write("x")
        probes["write_outside"] = "written"
    except OSError:
        probes["write_outside"] = "refused"
    try:
        open(os.path.join(os.environ["TMPDIR"], "scratch"), "w").write("x")
        probes["write_scratch"] = "written"
    except OSError:
        probes["write_scratch"] = "refused"
    try:
        open(os.path.join(os.environ["KFORGE_BASELINE_CACHE"], "poisoned"), "w").write("x")
        probes["write_baseline_cache"] = "written"
    except OSError:
        probes["write_baseline_cache"] = "refused"
    print(json.dumps({"outcome": "ok", "message": json.dumps(probes)}), flush=True)
)";

TEST_F(HarnessWorkerTest, TheSandboxRefusesNetworkAndWritesOutsideItsScratch) {
  std::ofstream(script_) << kProbeWorker;
  HarnessOptions o = options();
  o.isolation = "bwrap";
  o.baseline_cache = dir_ / "baselines";
  HarnessWorker w(o);
  auto a = w.evaluate(request("probe"));
  if (!a.is_ok() && a.status().message().find("bubblewrap") != std::string::npos)
    GTEST_SKIP() << a.status().message();  // no bubblewrap here: kforge says so (see the next test)
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  auto probes = Json::parse(a->message);
  EXPECT_EQ(probes["network"], "refused");
  EXPECT_EQ(probes["write_outside"], "refused");
  EXPECT_EQ(probes["write_scratch"], "written");
  EXPECT_NE(w.isolation().find("bubblewrap"), std::string::npos) << w.isolation();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "written_by_worker"));
  // torch.compile's baseline cache: read-only where a candidate may run (sandbox/isolation.h).
  EXPECT_EQ(probes["write_baseline_cache"], "refused");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "baselines" / "poisoned"));
}

TEST_F(HarnessWorkerTest, OnlyABaselinesWorkerWritesTheBaselineCache) {
  std::ofstream(script_) << kProbeWorker;
  HarnessOptions o = options();
  o.isolation = "bwrap";
  o.baseline_cache = dir_ / "baselines";
  o.baselines_writer = true;
  HarnessWorker w(o);
  auto a = w.evaluate(request("probe"));
  if (!a.is_ok() && a.status().message().find("bubblewrap") != std::string::npos) GTEST_SKIP() << a.status().message();
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  auto probes = Json::parse(a->message);
  EXPECT_EQ(probes["write_baseline_cache"], "written");
  EXPECT_EQ(probes["write_outside"], "refused");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "baselines" / "poisoned"));
}

TEST_F(HarnessWorkerTest, WithoutTheSandboxTheSameProbesSucceedAndKforgeSaysSo) {
  std::ofstream(script_) << kProbeWorker;
  HarnessOptions o = options();
  o.isolation = "none";
  HarnessWorker w(o);
  auto a = w.evaluate(request("probe"));
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  auto probes = Json::parse(a->message);
  EXPECT_EQ(probes["write_outside"], "written");  // the probe can see what isolation prevents
  EXPECT_NE(w.isolation().find("NOT isolated"), std::string::npos) << w.isolation();
}

TEST(MilestoneReward, FollowsThePapersMargins) {
  EvalResult r;
  r.predicted = false;
  r.outcome = Outcome::kWrongAnswer;
  EXPECT_EQ(milestone_reward(r), -1);
  r.outcome = Outcome::kOk;
  EXPECT_EQ(milestone_reward(r), 1);  // correct, not timed
  r.t_eager = 1.0;
  r.t_compile = 0.8;
  r.t_candidate = 0.96;  // not 5 % faster than eager
  EXPECT_EQ(milestone_reward(r), 1);
  r.t_candidate = 0.94;  // 5 % faster than eager, slower than compile
  EXPECT_EQ(milestone_reward(r), 2);
  r.t_candidate = 0.77;  // 5 % faster than both? 0.77 < 0.76 is false
  EXPECT_EQ(milestone_reward(r), 2);
  r.t_candidate = 0.75;
  EXPECT_EQ(milestone_reward(r), 3);
  r.predicted = true;
  EXPECT_FALSE(milestone_reward(r).has_value());
  r.outcome = Outcome::kCompileError;
  EXPECT_EQ(milestone_reward(r), -1);
}

TEST(TimingFlags, NoiseBandAndEscapedWork) {
  EvalResult r;
  r.predicted = false;
  r.t_candidate = 1.00e-3;
  r.t_candidate_repeat = 1.02e-3;  // 2 % between two timings of the same candidate
  r.t_eager = 1.01e-3;
  r.t_eager_repeat = 1.00e-3;
  auto f = timing_flags(r);
  ASSERT_TRUE(f.noise.has_value());
  EXPECT_NEAR(*f.noise, 0.02, 1e-12);
  EXPECT_TRUE(f.within_noise);  // 1 % faster than eager is inside 2 % of noise
  EXPECT_FALSE(f.escaped_stream);
  r.t_eager = r.t_eager_repeat = 2e-3;  // twice as fast: far outside the noise
  EXPECT_FALSE(timing_flags(r).within_noise);
  r.t_candidate_wall = 1.1e-3;  // host time close to event time: nothing escaped
  EXPECT_FALSE(timing_flags(r).escaped_stream);
  r.t_candidate_wall = 5e-3;  // 4 ms of work the timed stream never saw
  EXPECT_TRUE(timing_flags(r).escaped_stream);
  r.t_candidate = 1e-5;
  r.t_candidate_wall = 1.5e-4;  // tiny: launch overhead, not escaped work
  EXPECT_FALSE(timing_flags(r).escaped_stream);
  // The harness saw the candidate make or switch to another stream while timed: escaped, whatever
  // the times say (launch-bound side-stream work keeps event and host times close).
  r.other_streams = 2;
  EXPECT_TRUE(timing_flags(r).escaped_stream);
  EXPECT_EQ(result_to_json(r)["other_streams"], 2);
}

TEST(SuiteMetrics, PaperDefinitions) {
  auto ok = [](double t, double eager, double compile) {
    EvalResult r;
    r.predicted = false;
    r.t_candidate = t;
    r.t_eager = eager;
    r.t_compile = compile;
    return r;
  };
  EvalResult wrong;
  wrong.predicted = false;
  wrong.outcome = Outcome::kWrongAnswer;
  std::vector<EvalResult> rs = {ok(1, 2, 0.5), ok(1, 0.5, 2), wrong, ok(2, 2, 8)};
  auto m = suite_metrics(rs, {1.0, std::nullopt, std::nullopt, 0.5});
  EXPECT_EQ(m.problems, 4);
  EXPECT_EQ(m.correct, 3);
  EXPECT_DOUBLE_EQ(m.pass_rate, 0.75);
  EXPECT_DOUBLE_EQ(*m.faster_than_eager, 0.25);   // only the first: 1 < 2; 2 < 2 is not faster
  EXPECT_DOUBLE_EQ(*m.faster_than_compile, 0.5);  // second and fourth
  EXPECT_NEAR(*m.speedup_vs_eager, std::cbrt(2 * 0.5 * 1), 1e-12);
  EXPECT_NEAR(*m.speedup_vs_compile, std::cbrt(0.5 * 2 * 4), 1e-12);
  EXPECT_NEAR(*m.median_floor_ratio, 0.625, 1e-12);  // floors 1/1 and 0.5/2
  EXPECT_FALSE(m.predicted);
  EXPECT_FALSE(m.speedup_vs_compile_tf32.has_value());  // not measured: no column
  // The precision-matched column (compile with TF32 matmuls): its own rate and geomean.
  rs[0].t_compile_tf32 = 0.25;
  rs[1].t_compile_tf32 = 1.0;
  rs[3].t_compile_tf32 = 4.0;
  m = suite_metrics(rs, {});
  EXPECT_DOUBLE_EQ(*m.faster_than_compile_tf32, 0.25);  // only the fourth: 2 < 4
  EXPECT_NEAR(*m.speedup_vs_compile_tf32, std::cbrt(0.25 * 1.0 * 2.0), 1e-12);
}

}  // namespace
}  // namespace kforge::sandbox
