// HarnessWorker: starts, feeds, watches and replaces the python harness worker process.
#include "sandbox/harness.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "base/files.h"
#include "sandbox/build.h"
#include "sandbox/python.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

std::optional<double> number_or_null(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

namespace {

EvalResult result_from_harness_fields(const Json& j, const std::string& protocol) {
  EvalResult r;
  r.predicted = false;
  r.protocol = j.value("protocol", protocol);
  r.device = j.value("device", "");
  r.torch_version = j.value("torch", "");
  r.message = j.value("message", "");
  std::string outcome = j.value("outcome", "");
  auto parsed = outcome_from_name(outcome);
  if (parsed) {
    r.outcome = *parsed;
  } else {
    r.outcome = Outcome::kRuntimeFault;
    r.message = "the harness answered an unknown outcome '" + outcome + "': " + r.message;
  }
  r.max_abs_err = number_or_null(j, "max_abs_err");
  r.max_rel_err = number_or_null(j, "max_rel_err");
  r.t_candidate = number_or_null(j, "t_candidate");
  r.t_eager = number_or_null(j, "t_eager");
  r.t_compile = number_or_null(j, "t_compile");
  r.t_compile_tf32 = number_or_null(j, "t_compile_tf32");
  r.t_candidate_repeat = number_or_null(j, "t_candidate_repeat");
  r.t_eager_repeat = number_or_null(j, "t_eager_repeat");
  r.t_candidate_wall = number_or_null(j, "t_candidate_wall");
  if (j.contains("other_streams") && j["other_streams"].is_number_integer())
    r.other_streams = j["other_streams"].get<int>();
  r.samples = j.value("samples", 0);
  if (j.contains("cuda_graph") && j["cuda_graph"].is_object())
    r.cuda_graph = OrderedJson::parse(j["cuda_graph"].dump());
  // Timed baselines beyond the three with fields of their own (names: baselines.def).
  for (const auto& name : baseline_names()) {
    if (name == "eager" || name == "compile" || name == "compile_tf32") continue;
    if (auto t = number_or_null(j, ("t_" + name).c_str())) r.t_baselines[name] = *t;
  }
  if (j.contains("compile_seconds") && j["compile_seconds"].is_object()) {
    for (const auto& [name, v] : j["compile_seconds"].items())
      if (v.is_number()) r.compile_seconds[name] = v.get<double>();
  }
  r.timing_method = j.value("timing", "");
  r.fresh_inputs = j.value("fresh_inputs", false);
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& w : j["warnings"])
      if (w.is_string()) r.warnings.push_back(w.get<std::string>());
  }
  if (j.contains("profile_error") && j["profile_error"].is_string())
    r.message += (r.message.empty() ? "" : "; ") + std::string("profile: ") + j["profile_error"].get<std::string>();
  return r;
}

}  // namespace

EvalResult result_from_harness_json(const Json& j, const std::string& protocol) {
  try {
    return result_from_harness_fields(j, protocol);
  } catch (const Json::exception& e) {
    EvalResult r;
    r.predicted = false;
    r.protocol = protocol;
    r.outcome = Outcome::kRuntimeFault;
    r.message = std::string("the harness's answer is malformed: ") + e.what();
    return r;
  }
}

HarnessWorker::HarnessWorker(HarnessOptions options) : options_(std::move(options)) {
  if (options_.python.empty()) {
    const char* h = std::getenv("KFORGE_HARNESS_PYTHON");
    options_.python = h && *h ? h : python_executable();
  }
}

HarnessWorker::~HarnessWorker() {
  stop();
}

Status HarnessWorker::start() {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  if (options_.python.find('/') != std::string::npos && ::access(options_.python.c_str(), X_OK) != 0) {
    return external_error("the harness needs a python3 with torch, and " + options_.python +
                          " is not an executable: set KFORGE_PYTHON (or KFORGE_HARNESS_PYTHON)");
  }
  // One scratch directory per worker start, unique in this process: workers run side by side (bench's
  // verify workers, the baselines worker), and a worker that restarts removes its old scratch.
  static std::atomic<int> next_start{0};
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(next_start++);
  scratch_ = fs::temp_directory_path() / ("kforge-worker-" + id);
  KF_ASSIGN_OR_RETURN(isolation_,
                      prepare_isolation({.mode = options_.isolation,
                                         .scratch = scratch_,
                                         .baseline_cache = options_.baseline_cache.empty() ? baseline_cache_dir()
                                                                                           : options_.baseline_cache,
                                         .baselines_writer = options_.baselines_writer}));
  std::string pythonpath = (home / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  spec_ = {};
  spec_.env = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
               // Candidate code runs here: the bytecode cache only where bubblewrap makes it read-only.
               isolation_.argv_prefix.empty() ? "KFORGE_PYCACHE=off" : pycache_env()};
  spec_.env.insert(spec_.env.end(), isolation_.env.begin(), isolation_.env.end());
  spec_.env.insert(spec_.env.end(), options_.extra_env.begin(), options_.extra_env.end());
  spec_.argv = isolation_.argv_prefix;
  spec_.argv.insert(spec_.argv.end(), {options_.python, "-m", "kforge.harness", "--serve"});
  spec_.stderr_log = fs::temp_directory_path() / ("kforge-harness-" + id + ".log");
  const Isolation* iso = &isolation_;
  spec_.in_child = [iso] { join_cgroup_in_child(*iso); };
  return process_.start(spec_);
}

void HarnessWorker::stop() {
  process_.stop();
  if (!scratch_.empty()) release_isolation(isolation_, scratch_);
  scratch_.clear();
}

StatusOr<double> HarnessWorker::precompile(const fs::path& problem, const Protocol& protocol, double timeout_seconds) {
  if (!options_.baselines_writer)
    return internal_error("precompile on a worker that is not a baselines worker (HarnessOptions.baselines_writer)");
  double timeout = timeout_seconds;
  if (!process_.running()) {
    stop();
    KF_RETURN_IF_ERROR(start());
    timeout += options_.start_timeout_seconds;
  }
  Json req = {{"cmd", "precompile_reference"},
              {"problem", fs::absolute(problem).string()},
              {"protocol", protocol_to_json(protocol)}};
  const LineWorker::Reply reply = process_.ask(req.dump(), timeout, &spec_);
  if (reply.kind != LineWorker::Reply::kAnswer) {
    const std::string tail = process_.stderr_tail();
    stop();
    return external_error(std::string("the baselines worker ") +
                          (reply.kind == LineWorker::Reply::kTimeout ? "gave no answer in time" : "died") +
                          (tail.empty() ? "" : ": " + tail));
  }
  KF_ASSIGN_OR_RETURN(Json j, parse_json(reply.line, "the baselines worker's answer"));
  if (!j.contains("precompile_seconds") || !j["precompile_seconds"].is_number())
    return external_error("precompile failed: " + j.value("message", reply.line.substr(0, 300)));
  return j["precompile_seconds"].get<double>();
}

StatusOr<EvalResult> HarnessWorker::evaluate(const EvalRequest& request) {
  double timeout = request.timeout_seconds;
  if (!process_.running()) {
    stop();
    KF_RETURN_IF_ERROR(start());
    timeout += options_.start_timeout_seconds;
  }
  Json req = {{"problem", fs::absolute(request.problem).string()},
              {"candidate", fs::absolute(request.candidate).string()},
              {"protocol", protocol_to_json(request.protocol)},
              {"timing", timing_to_json(request.timing)},
              {"verify", request.verify},
              {"profile", request.profile},
              {"static_check", request.static_check},
              {"trials", request.trials}};
  EvalResult failed;
  failed.predicted = false;
  failed.protocol = request.protocol.name;
  failed.outcome = Outcome::kRuntimeFault;
  const LineWorker::Reply reply = process_.ask(req.dump(), timeout, &spec_);
  if (reply.kind == LineWorker::Reply::kTimeout) {
    stop();
    failed.outcome = Outcome::kTimeout;
    failed.message = "no answer within " + std::to_string(static_cast<int>(timeout)) +
                     " s; the worker was killed (a hang, or a candidate far too slow)";
    return failed;
  }
  if (reply.kind == LineWorker::Reply::kDied) {
    const std::string how = describe_wait_status(reply.wait_status, !isolation_.argv_prefix.empty());
    const std::string tail = process_.stderr_tail();
    stop();
    failed.message = "the harness worker " + how + " without an answer" + (tail.empty() ? "" : ":\n" + tail);
    return failed;
  }
  auto j = parse_json(reply.line, "the harness's answer");
  if (!j.is_ok()) {
    stop();
    failed.message = j.status().message();
    return failed;
  }
  EvalResult r = result_from_harness_json(j.value(), request.protocol.name);
  // After a fault the CUDA context may be poisoned: the next candidate gets a fresh worker.
  if (r.outcome == Outcome::kRuntimeFault || r.outcome == Outcome::kResourceExhausted) stop();
  return r;
}

}  // namespace kforge::sandbox
