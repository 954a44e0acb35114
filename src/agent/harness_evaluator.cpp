// HarnessEvaluator: build each candidate once, verify and time it through one persistent worker.
#include "agent/harness_evaluator.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <ctime>
#include <optional>
#include <set>
#include <thread>

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
                                                          const std::string& source, const fs::path& dir, int jobs) {
  Build b;
  if (Status st = schedule::check_schedule(task.graph, s); !st.is_ok()) {
    b.outcome = sandbox::Outcome::kCompileError;
    b.message = st.message();
    return b;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return external_error("cannot create the candidate directory " + dir.string() + ": " + ec.message());
  b.ran_nvcc = true;
  auto built = sandbox::build_candidate(task.graph, s, source, dir, jobs);
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

Status HarnessEvaluator::prebuild(const std::vector<std::pair<const Task*, schedule::Schedule>>& todo, int threads,
                                  const std::function<void(int, int)>& progress) {
  struct Job {
    const Task* task;
    const schedule::Schedule* schedule;
    const std::string* source;
    fs::path dir;
    std::optional<StatusOr<Build>> built;
  };
  std::vector<Job> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<std::string> queued;
    for (const auto& [task, s] : todo) {
      fs::path dir = candidate_dir(*task, s);
      if (builds_.count(dir.string()) || !queued.insert(dir.string()).second) continue;
      if (task->source.empty())
        return invalid_argument("task '" + task->name + "' has no problem file to build against");
      KF_RETURN_IF_ERROR(reference_source(*task).status());
      jobs.push_back({task, &s, &sources_.at(task->source), std::move(dir), std::nullopt});
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      Job& j = jobs[i];
      j.built = build(*j.task, *j.schedule, *j.source, j.dir, /*jobs=*/1);
      const int d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress(d, static_cast<int>(jobs.size()));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads) && static_cast<size_t>(t) < jobs.size(); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (Job& j : jobs) {
    if (!j.built->is_ok()) return j.built->status();  // kforge cannot build at all (no nvcc, no disk)
    if (j.built->value().ran_nvcc) ++build_count_;
    builds_.emplace(j.dir.string(), std::move(j.built->value()));
  }
  return Status::ok();
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
    KF_ASSIGN_OR_RETURN(std::string source, reference_source(task));
    KF_ASSIGN_OR_RETURN(Build b, build(task, s, source, dir, options_.jobs));
    if (b.ran_nvcc) ++build_count_;
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
    KF_ASSIGN_OR_RETURN(sandbox::Protocol protocol, sandbox::protocol_named(task.protocol));
    sandbox::EvalRequest request =
        sandbox::candidate_request(task.source, dir, protocol, /*profile=*/true, options_.trials);
    const std::string task_key = task.name + "|" + task.protocol;
    auto known = options_.eager_once ? eager_.find(task_key) : eager_.end();
    std::erase_if(request.timing.baselines, [&](const std::string& b) {
      return b == "eager" ? known != eager_.end() : !options_.compile_baseline;  // compile and compile_tf32
    });
    KF_ASSIGN_OR_RETURN(e.result, worker_.evaluate(request));
    if (e.result.outcome == sandbox::Outcome::kResourceExhausted) {
      // Out of memory may be what earlier candidates left in the worker's processes (their caches,
      // a leak): once more in fresh processes, and only a second failure is the candidate's.
      const std::string first = e.result.message;
      worker_.restart();
      ++requests_;
      KF_ASSIGN_OR_RETURN(e.result, worker_.evaluate(request));
      e.result.message = "measured again in a fresh harness after running out of memory (" + first.substr(0, 200) +
                         ")" + (e.result.message.empty() ? "" : "; " + e.result.message);
    }
    if (options_.eager_once && known == eager_.end() && e.result.t_eager) {
      eager_[task_key] = {e.result.t_eager, e.result.t_eager_repeat};
    } else if (known != eager_.end() && e.result.t_candidate) {
      e.result.t_eager = known->second.t;
      e.result.t_eager_repeat = known->second.repeat;
    }
    KF_RETURN_IF_ERROR(record(task, s, e.result));
  }
  e.reward = sandbox::milestone_reward(e.result);
  return e;
}

}  // namespace kforge::agent
