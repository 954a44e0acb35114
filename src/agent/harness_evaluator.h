// The GPU evaluator: each candidate schedule generated and built with nvcc (sandbox/candidate.h, as
// `kforge optimize` and `bench` build), then verified and timed against eager and torch.compile by
// the harness worker (sandbox/harness.h). Its times and correctness are measured, and say so.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/env.h"
#include "costmodel/measurements.h"
#include "sandbox/harness.h"

namespace kforge::agent {

struct HarnessEvaluatorOptions {
  std::filesystem::path work_dir;  // candidates are built in work_dir/<task>/<schedule hash>/
  int trials = 30;                 // timed trials per variant (candidate, eager, torch.compile)
  int jobs = 0;                    // nvcc jobs per build (0: every core)
  bool compile_baseline = true;    // time torch.compile too (false: candidate and eager only)
  // Time eager once per task (with its first correct candidate) and give every later candidate of the
  // task those times: eager is the task's reference, the same model each time.
  bool eager_once = false;
  costmodel::MeasurementDb* db = nullptr;  // when set, every measured correct candidate is recorded here
  std::string commit;                      // recorded with the measurements (empty: "unknown")
  sandbox::HarnessOptions harness;         // the worker's python and isolation (defaults: as kforge evaluate)
};

class HarnessEvaluator : public Evaluator {
 public:
  explicit HarnessEvaluator(HarnessEvaluatorOptions options);

  std::string name() const override { return "GPU harness (measured)"; }
  bool measured() const override { return true; }
  // Builds the candidate (once per task and schedule: evaluating the same schedule again reuses its
  // build), then verifies and profiles it in one harness request. A malformed schedule, a schedule
  // codegen refuses, or an nvcc failure is compile_error (or forbidden); a wrong answer, a crash or a
  // timeout is the harness's outcome (the worker restarts itself for the next candidate). The reward
  // is sandbox::milestone_reward of the measured result. A Status error means kforge cannot evaluate
  // at all: a task without a problem file, no nvcc, no harness python, a measurement not recorded.
  // Calls are serialized (one worker, one GPU).
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override;

  // Builds the candidates of many schedules at once, `threads` nvcc builds in parallel (one core each),
  // before they are evaluated: evaluate then finds them built. Schedules already built are skipped; a
  // candidate that does not build is recorded as evaluate would record it (compile_error, forbidden).
  // `progress` (may be empty) hears (done, total) after each build.
  Status prebuild(const std::vector<std::pair<const Task*, schedule::Schedule>>& todo, int threads,
                  const std::function<void(int, int)>& progress);

  // Where the candidate of `s` for `task` is (or would be) built.
  std::filesystem::path candidate_dir(const Task& task, const schedule::Schedule& s) const;
  int builds() const;            // candidates generated and built so far (reused builds not counted)
  int harness_requests() const;  // requests sent to the worker so far
  int worker_starts() const;     // worker processes started so far (1 + restarts after faults)

 private:
  struct Build {
    sandbox::Outcome outcome = sandbox::Outcome::kOk;  // kOk, kCompileError or kForbidden
    std::string message;
    bool ran_nvcc = false;  // false: refused before any build (a malformed schedule)
  };
  // Builds one candidate with `jobs` nvcc jobs; touches no member (prebuild calls it from many threads).
  static StatusOr<Build> build(const Task& task, const schedule::Schedule& s, const std::string& source,
                               const std::filesystem::path& dir, int jobs);
  StatusOr<std::string> reference_source(const Task& task);
  Status record(const Task& task, const schedule::Schedule& s, const sandbox::EvalResult& r);

  HarnessEvaluatorOptions options_;
  mutable std::mutex mutex_;
  sandbox::HarnessWorker worker_;
  std::map<std::string, Build> builds_;         // by candidate directory
  std::map<std::string, std::string> sources_;  // problem file -> its text
  struct EagerTimes {
    std::optional<double> t, repeat;
  };
  std::map<std::string, EagerTimes> eager_;  // by task name and protocol (eager_once)
  int build_count_ = 0;
  int requests_ = 0;
};

}  // namespace kforge::agent
