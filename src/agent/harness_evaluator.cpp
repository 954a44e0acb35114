// HarnessEvaluator: build each candidate once, verify and time it through one persistent worker.
#include "agent/harness_evaluator.h"

#include <cctype>
#include <ctime>

#include "base/files.h"
#include "costmodel/roofline.h"
#include "sandbox/candidate.h"
#include "schedule/planner.h"

namespace kforge::agent {

namespace fs = std::filesystem;

namespace {

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? std::string("task") : out;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

HarnessEvaluator::HarnessEvaluator(HarnessEvaluatorOptions options)
    : options_(std::move(options)), worker_(options_.harness) {}

fs::path HarnessEvaluator::candidate_dir(const Task& task, const schedule::Schedule& s) const {
  return options_.work_dir / safe_name(task.name) / costmodel::schedule_hash(task.graph, s);
}

int HarnessEvaluator::builds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return build_count_;
}

int HarnessEvaluator::harness_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

int HarnessEvaluator::worker_starts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return worker_.starts();
}

StatusOr<std::string> HarnessEvaluator::reference_source(const Task& task) {
  auto it = sources_.find(task.source);
  if (it != sources_.end()) return it->second;
  auto text = read_file(task.source);
  if (!text.is_ok()) return text.status().with_context("the problem file of task '" + task.name + "' cannot be read");
  return sources_.emplace(task.source, std::move(text).value()).first->second;
}

StatusOr<HarnessEvaluator::Build> HarnessEvaluator::build(const Task& task, const schedule::Schedule& s,
                                                          const fs::path& dir) {
  Build b;
  if (Status st = schedule::check_schedule(task.graph, s); !st.is_ok()) {
    b.outcome = sandbox::Outcome::kCompileError;
    b.message = st.message();
    return b;
  }
  KF_ASSIGN_OR_RETURN(std::string source, reference_source(task));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return external_error("cannot create the candidate directory " + dir.string() + ": " + ec.message());
  ++build_count_;
  auto built = sandbox::build_candidate(task.graph, s, source, dir, options_.jobs);
  if (!built.is_ok()) {
    // No nvcc, or files that cannot be written: kforge cannot build anything. Anything else is codegen
    // refusing this schedule, a fact about the candidate.
    const ErrorCode code = built.status().code();
    if (code == ErrorCode::kExternal || code == ErrorCode::kNotFound) return built.status();
    b.outcome = sandbox::Outcome::kCompileError;
    b.message = built.status().message();
    return b;
  }
  if (!built->build.ok) {
    b.outcome = built->build.outcome == "forbidden" ? sandbox::Outcome::kForbidden : sandbox::Outcome::kCompileError;
    b.message = built->build.message;
  }
  return b;
}

Status HarnessEvaluator::record(const Task& task, const schedule::Schedule& s, const sandbox::EvalResult& r) {
  if (options_.db == nullptr || r.predicted || r.outcome != sandbox::Outcome::kOk || !r.t_candidate) {
    return Status::ok();
  }
  const costmodel::ProgramCost cost = costmodel::program_cost(task.graph, s);
  costmodel::Measurement m;
  m.problem = task.name;
  m.protocol = r.protocol.empty() ? task.protocol : r.protocol;
  m.device = r.device;
  m.torch = r.torch_version;
  m.commit = options_.commit.empty() ? "unknown" : options_.commit;
  m.date = today();
  m.schedule_hash = costmodel::schedule_hash(task.graph, s);
  m.predicted_seconds = cost.seconds;
  m.measured_seconds = *r.t_candidate;
  m.features = costmodel::candidate_features(task.graph, s, cost);
  return options_.db->record(m).with_context("recording the measurement of task '" + task.name + "'");
}

StatusOr<Evaluation> HarnessEvaluator::evaluate(const Task& task, const schedule::Schedule& s) {
  if (task.source.empty()) {
    return invalid_argument("task '" + task.name +
                            "' has no problem file (Task::source), and the GPU harness verifies a candidate "
                            "against its problem's reference: give tasks loaded from problem files, or evaluate "
                            "with the cost model (--device cpu)");
  }
  KF_RETURN_IF_ERROR(protocol_tolerance(task.protocol).status());
  std::lock_guard<std::mutex> lock(mutex_);
  const fs::path dir = candidate_dir(task, s);
  auto it = builds_.find(dir.string());
  if (it == builds_.end()) {
    KF_ASSIGN_OR_RETURN(Build b, build(task, s, dir));
    it = builds_.emplace(dir.string(), std::move(b)).first;
  }
  Evaluation e;
  if (it->second.outcome != sandbox::Outcome::kOk) {
    // A compile error is a fact about the candidate, established without a GPU.
    e.result.predicted = false;
    e.result.protocol = task.protocol;
    e.result.outcome = it->second.outcome;
    e.result.message = it->second.message;
  } else {
    ++requests_;
    KF_ASSIGN_OR_RETURN(e.result, worker_.evaluate(sandbox::candidate_request(task.source, dir, task.protocol,
                                                                              /*profile=*/true, options_.trials)));
    KF_RETURN_IF_ERROR(record(task, s, e.result));
  }
  e.reward = sandbox::milestone_reward(e.result);
  return e;
}

}  // namespace kforge::agent
