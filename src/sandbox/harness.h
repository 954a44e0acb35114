// The GPU harness as seen from C++: a worker process (python3 -m kforge.harness --serve) that
// verifies and times candidates, spoken to in JSON lines over pipes. The supervisor (this side)
// never touches CUDA; a candidate that crashes, hangs or poisons the CUDA context costs only the
// worker, which is killed with its whole process group and started afresh for the next request.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/line_worker.h"
#include "base/status.h"
#include "sandbox/isolation.h"
#include "sandbox/protocol.h"
#include "sandbox/result.h"

namespace kforge::sandbox {

struct EvalRequest {
  std::filesystem::path problem;    // the KernelBench-format reference (.py)
  std::filesystem::path candidate;  // the candidate's model_new.py
  Protocol protocol;                // sent whole: the harness verifies as it says
  Timing timing;                    // with profile: the method and the baselines timed beside the candidate
  bool verify = true;
  bool profile = false;      // time the candidate and timing.baselines (after verifying, if verify)
  bool static_check = true;  // refuse (forbidden) a candidate whose source breaks a rule, before it runs
  int trials = 30;
  double timeout_seconds = 300;  // for the whole request; past it the worker is killed: outcome timeout
};

struct HarnessOptions {
  std::string python;                  // a python3 with torch (default: python_executable())
  std::vector<std::string> extra_env;  // "NAME=value"
  double start_timeout_seconds = 120;  // importing torch and creating the CUDA context
  std::string isolation;               // "auto" (default: $KFORGE_SANDBOX or auto), "bwrap" or "none"
  // A baselines worker: it only precompiles references (precompile()) into the baseline cache, which
  // is writable in its sandbox alone; it never loads a candidate. Other workers see the cache read-only.
  bool baselines_writer = false;
  std::filesystem::path baseline_cache;  // default: baseline_cache_dir() (one per run)
};

class HarnessWorker {
 public:
  explicit HarnessWorker(HarnessOptions options = {});
  ~HarnessWorker();
  HarnessWorker(const HarnessWorker&) = delete;
  HarnessWorker& operator=(const HarnessWorker&) = delete;

  // Never fails as a call: a broken candidate or worker is an outcome in the result. A Status
  // error means kforge itself cannot run the harness (no python, no kforge tree).
  StatusOr<EvalResult> evaluate(const EvalRequest& request);

  // A baselines worker (options.baselines_writer): compiles the problem's reference with
  // torch.compile into the baseline cache, so that the candidates' workers, which copy their
  // problem's part privately, find it warm. Returns the seconds it took; failures are errors.
  StatusOr<double> precompile(const std::filesystem::path& problem, const Protocol& protocol,
                              double timeout_seconds = 600);

  int starts() const { return process_.starts(); }  // worker processes started so far (1 + restarts)
  // Ends the worker (and the candidate's process with it): the next evaluate starts fresh ones, with
  // all of their GPU memory given back.
  void restart() { stop(); }
  // How the last worker was isolated ("bubblewrap (...); cgroup v2: ..."), empty before the first.
  const std::string& isolation() const { return isolation_.description; }

 private:
  Status start();
  void stop();

  HarnessOptions options_;
  LineWorker process_;
  LineWorkerSpec spec_;
  std::filesystem::path scratch_;
  Isolation isolation_;
};

// The harness's JSON answer as the result type (unknown outcomes become runtime_fault).
EvalResult result_from_harness_json(const Json& j, const std::string& protocol);

}  // namespace kforge::sandbox
