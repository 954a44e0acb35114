// The Python half of `kforge synth` as seen from C++: a long-lived `python3 -m kforge.synth_worker
// --serve` process per thread, spoken to in JSON lines (one request, one answer). A worker that
// crashes or hangs is killed with its process group and started afresh for the next request.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/line_worker.h"
#include "base/status.h"

namespace kforge::synth {

struct WorkerOptions {
  std::string python;                  // a python3 with torch (default: sandbox::python_executable())
  std::vector<std::string> extra_env;  // "NAME=value"
  double start_timeout_seconds = 120;  // importing torch
};

class SynthWorker {
 public:
  explicit SynthWorker(WorkerOptions options = {});
  ~SynthWorker();
  SynthWorker(const SynthWorker&) = delete;
  SynthWorker& operator=(const SynthWorker&) = delete;

  // One request and its answer. A worker that dies, hangs past `timeout_seconds` or answers
  // garbage is an external_error (the caller records it against the task) and is replaced.
  // An answer {"error": ...} from the worker itself is returned as an internal_error.
  StatusOr<Json> request(const Json& req, double timeout_seconds);

  int starts() const { return process_.starts(); }

 private:
  Status start();
  void stop();

  WorkerOptions options_;
  LineWorker process_;
  LineWorkerSpec spec_;
  std::filesystem::path stderr_log_;
  std::filesystem::path scratch_;  // the worker's files (task sources it imports); removed with it
};

}  // namespace kforge::synth
