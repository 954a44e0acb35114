// SynthWorker: starts, feeds, watches and replaces the python synth worker.
#include "synth/worker.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "base/files.h"
#include "sandbox/toolchain.h"

namespace kforge::synth {

namespace fs = std::filesystem;

namespace {

std::atomic<int> next_log_id{0};

}  // namespace

SynthWorker::SynthWorker(WorkerOptions options) : options_(std::move(options)) {
  if (options_.python.empty()) options_.python = sandbox::python_executable();
}

SynthWorker::~SynthWorker() {
  stop();
  std::error_code ec;
  if (!stderr_log_.empty()) fs::remove(stderr_log_, ec);
}

Status SynthWorker::start() {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(next_log_id++);
  if (stderr_log_.empty()) stderr_log_ = fs::temp_directory_path() / ("kforge-synth-worker-" + id + ".log");
  scratch_ = fs::temp_directory_path() / ("kforge-synth-scratch-" + id);
  std::error_code ec;
  fs::create_directories(scratch_, ec);
  if (ec) return external_error("cannot create " + scratch_.string() + ": " + ec.message());
  std::string pythonpath = (home / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  spec_ = {};
  spec_.env = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
               "OMP_NUM_THREADS=1",        "MKL_NUM_THREADS=1",         "KFORGE_SYNTH_SCRATCH=" + scratch_.string()};
  spec_.env.insert(spec_.env.end(), options_.extra_env.begin(), options_.extra_env.end());
  spec_.argv = {options_.python, "-m", "kforge.synth_worker", "--serve"};
  spec_.stderr_log = stderr_log_;
  return process_.start(spec_);
}

void SynthWorker::stop() {
  process_.stop();
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
}

StatusOr<Json> SynthWorker::request(const Json& req, double timeout_seconds) {
  double timeout = timeout_seconds;
  if (!process_.running()) {
    stop();
    KF_RETURN_IF_ERROR(start());
    timeout += options_.start_timeout_seconds;
  }
  const LineWorker::Reply reply = process_.ask(req.dump(), timeout, &spec_);
  if (reply.kind == LineWorker::Reply::kTimeout) {
    stop();
    return external_error("the synth worker gave no answer within " + std::to_string(static_cast<int>(timeout)) +
                          " s and was killed");
  }
  if (reply.kind == LineWorker::Reply::kDied) {
    std::string tail = process_.stderr_tail();
    stop();
    if (tail.find("No module named 'torch'") != std::string::npos) {
      return external_error(
          "kforge synth needs PyTorch: install it (Debian: apt-get install python3-torch) or set KFORGE_PYTHON to a "
          "python3 that has torch");
    }
    return external_error("the synth worker died without an answer" + (tail.empty() ? "" : ":\n" + tail));
  }
  auto j = parse_json(reply.line, "the synth worker's answer");
  if (!j.is_ok()) {
    stop();
    return external_error(j.status().message());
  }
  if (j->is_object() && j->contains("error")) {
    std::string msg = (*j)["error"].is_string() ? (*j)["error"].get<std::string>() : (*j)["error"].dump();
    if (j->contains("traceback") && (*j)["traceback"].is_string()) msg += "\n" + (*j)["traceback"].get<std::string>();
    return internal_error("the synth worker failed: " + msg);
  }
  return std::move(j).value();
}

}  // namespace kforge::synth
