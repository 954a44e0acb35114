// kforge bench: every problem of a suite through import -> plan -> build (in parallel on the CPU
// cores) -> verify (in parallel harness workers sharing the GPU, while builds go on) -> profile
// (one worker, the GPU to itself), then the paper's metrics per level as a table and as JSON.
// Without a GPU the candidates are built and the cost model predicts their times (labelled).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/files.h"
#include "base/subprocess.h"
#include "base/table.h"
#include "cli/bench_report.h"
#include "cli/bundle.h"
#include "cli/commands.h"
#include "cli/evaluate.h"
#include "cli/html_report.h"
#include "cli/stages.h"
#include "costmodel/measurements.h"
#include "sandbox/metrics.h"
#include "sandbox/toolchain.h"

namespace kforge::cli {

namespace fs = std::filesystem;

namespace {

// Problems sort by their leading number where they have one ("2_..." before "10_...").
bool problem_less(const BenchProblem& a, const BenchProblem& b) {
  if (a.level != b.level) return a.level < b.level;
  auto num = [](const std::string& s) {
    size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i ? std::stol(s.substr(0, i)) : -1L;
  };
  long na = num(a.name), nb = num(b.name);
  return na != nb ? na < nb : a.name < b.name;
}

StatusOr<std::vector<BenchProblem>> find_problems(const BenchArgs& a) {
  std::error_code ec;
  fs::path suite(a.suite);
  if (!fs::is_directory(suite, ec))
    return not_found("--suite " + a.suite + " is not a directory: give a directory of KernelBench problems (.py)");
  auto levels = split_list(a.levels);
  auto only = split_list(a.only);
  std::vector<BenchProblem> out;
  auto add_dir = [&](const fs::path& dir, const std::string& level) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ".py") continue;
      std::string stem = e.path().stem().string();
      if (!only.empty() && !only.count(stem)) continue;
      out.push_back({level, stem, e.path()});
    }
  };
  std::string suite_name = fs::absolute(suite).lexically_normal().filename().string();
  if (suite_name.empty()) suite_name = fs::absolute(suite).lexically_normal().parent_path().filename().string();
  bool has_files = false;
  for (const auto& e : fs::directory_iterator(suite, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".py") has_files = true;
  }
  if (has_files && (levels.empty() || levels.count(suite_name))) add_dir(suite, suite_name);
  for (const auto& e : fs::directory_iterator(suite, ec)) {
    if (!e.is_directory()) continue;
    std::string level = e.path().filename().string();
    if (!levels.empty() && !levels.count(level)) continue;
    add_dir(e.path(), level);
  }
  if (out.empty())
    return not_found("no problems (.py) found in " + a.suite +
                     (levels.empty() && only.empty() ? "" : " with the given --levels / --only"));
  std::sort(out.begin(), out.end(), problem_less);
  return out;
}

// The whole run's state, shared by the builder, verifier and profiler threads.
class BenchRun {
 public:
  BenchRun(const BenchArgs& a, Protocol p, std::string device, std::vector<BenchProblem> problems, fs::path out)
      : args_(a), protocol_(std::move(p)), device_(std::move(device)), out_(std::move(out)) {
    for (auto& pr : problems) {
      BenchRecord r;
      r.out_dir = out_ / pr.level / pr.name;
      r.problem = std::move(pr);
      r.result.protocol = protocol_.name;
      records_.push_back(std::move(r));
    }
  }

  // Takes over the final results of an earlier run in the same directory (--resume): those
  // problems are not built or verified again; correct ones without times are still timed.
  Status resume_from(const Json& earlier);

  int run();
  // Opens --db (the measurement database) before the run, so a bad path fails before any work.
  Status open_db() {
    if (args_.db.empty()) return Status::ok();
    auto db = costmodel::MeasurementDb::open(args_.db);
    if (!db.is_ok()) return db.status();
    db_ = std::move(db).value();
    return Status::ok();
  }

 private:
  void build_loop();
  void verify_loop();
  // Compiles r's reference with torch.compile in `baselines` (a baselines worker) so that the profile
  // phase finds it in the baseline cache; a failure is reported, and the profile compiles it then.
  void precompile_baselines(sandbox::HarnessWorker& baselines, BenchRecord& r);
  // Verification of r's candidate (the baselines are precompiled apart: precompile_baselines).
  sandbox::EvalRequest verify_request(const BenchRecord& r) const {
    sandbox::EvalRequest req;
    req.problem = r.problem.path;
    req.candidate = r.out_dir / "model_new.py";
    req.protocol = protocol_;
    req.timing = args_.common.timing;
    req.timeout_seconds = 300;
    return req;
  }
  // The iterate step: r's candidate gave `first` (a wrong answer or a fault); builds and verifies the
  // fallback plans in order until one is correct. Fills `out` (r with the final candidate, every
  // attempt recorded) and answers whether anything was tried.
  bool fall_back(const BenchRecord& r, const sandbox::EvalResult& first, sandbox::HarnessWorker& worker,
                 BenchRecord& out);
  void reverify_alone();
  void profile_all();
  void progress(const BenchRecord& r, const std::string& what);
  bool past_time_limit() const {
    return args_.time_limit > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > args_.time_limit;
  }
  void save();
  OrderedJson report() const;
  // --bundle: the audit bundle of every record with a final result; an exit code.
  int write_bench_bundle(const OrderedJson& report) const;
  // Adds r's measurement to --db (when given and r was timed on the GPU); a failure is reported, not fatal.
  void record_measurement(const BenchRecord& r);

  const BenchArgs& args_;
  Protocol protocol_;
  std::string device_;
  fs::path out_;
  std::vector<BenchRecord> records_;
  std::mutex mu_;
  std::condition_variable built_cv_;
  std::deque<size_t> to_verify_;
  std::atomic<size_t> next_build_{0};
  int builders_left_ = 0;
  int build_jobs_ = 1;  // nvcc jobs each problem's build may use (capped for the process: set_process_nvcc_limit)
  int done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::string torch_;
  int resumed_ = 0;
  std::string isolation_;                         // how the harness workers were isolated (from the first one)
  std::unique_ptr<costmodel::MeasurementDb> db_;  // --db
};

Status BenchRun::resume_from(const Json& earlier) {
  if (earlier.value("protocol", "") != protocol_.name)
    return invalid_argument("--resume: the earlier run in " + out_.string() + " used protocol " +
                            earlier.value("protocol", "?") + ", not " + protocol_.name +
                            "; resume with the same protocol or pick another --out");
  if (earlier.value("predicted", true) != (device_ != "cuda"))
    return invalid_argument("--resume: the earlier run in " + out_.string() + " was " +
                            (earlier.value("predicted", true) ? "predicted (no GPU)" : "measured on a GPU") +
                            "; resume it on the same kind of machine or pick another --out");
  for (auto& r : records_) {
    for (const auto& j : earlier.value("problems", Json::array())) {
      if (j.value("level", "") != r.problem.level || j.value("problem", "") != r.problem.name) continue;
      if (auto restored = record_from_json(j, r, earlier)) {
        r = std::move(*restored);
        ++resumed_;
        if (torch_.empty()) torch_ = r.result.torch_version;
      }
    }
  }
  return Status::ok();
}

// Called with mu_ held. A line per event; on a terminal, also a bar with the ETA under the lines (redrawn),
// elsewhere the count and ETA at the end of each line.
void BenchRun::progress(const BenchRecord& r, const std::string& what) {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const size_t total = records_.size();
  const size_t done = std::count_if(records_.begin(), records_.end(), [](const BenchRecord& x) { return !x.skipped; });
  std::string eta;
  if (done > static_cast<size_t>(resumed_) && done < total) {
    double left = s / static_cast<double>(done - resumed_) * static_cast<double>(total - done);
    eta = ", ETA " + format_seconds(left);
  }
  std::string one_line = what;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  static const bool terminal = ::isatty(STDERR_FILENO) == 1;
  if (terminal) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "[%4.0f s] %-7s %-52s %s", s, r.problem.level.c_str(), r.problem.name.substr(0, 52).c_str(),
               one_line.c_str());
  if (!terminal) {
    std::fprintf(stderr, "  (%zu/%zu done%s)\n", done, total, eta.c_str());
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::fprintf(stderr, "\n[%s%s] %zu/%zu problems done%s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done, total, eta.c_str());
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void BenchRun::build_loop() {
  for (size_t i = next_build_++; i < records_.size() && !past_time_limit(); i = next_build_++) {
    if (!records_[i].skipped) continue;  // resumed: its result is final
    // Work on a copy: save() may read the records meanwhile; the result goes in under the lock.
    BenchRecord r = records_[i];
    auto t0 = std::chrono::steady_clock::now();
    auto turn = import_plan_build(r.problem.path.string(), protocol_, r.out_dir,
                                  {.plan = plan_options(args_.common), .force = true, .jobs = build_jobs_});
    r.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string line;
    std::string torch;
    if (!turn.is_ok()) {
      r.result.outcome = sandbox::Outcome::kCompileError;
      r.result.message = turn.status().message();
      r.result.predicted = device_ != "cuda";
      line = "not built: " + r.result.message.substr(0, 120);
    } else {
      r.floor_seconds = turn->built.cost.floor_seconds;
      r.predicted_seconds = turn->built.cost.seconds;
      r.features = costmodel::candidate_features(turn->graph, turn->sched, turn->built.cost);
      r.schedule_hash = costmodel::schedule_hash(turn->graph, turn->sched);
      r.built = turn->built.build.ok;
      r.build_stages = turn->stages;
      r.build_stages["nvcc_seconds"] = turn->built.build.nvcc_seconds;
      r.build_stages["units_compiled"] = turn->built.build.units_compiled;
      r.build_stages["link_seconds"] = turn->built.build.link_seconds;
      r.result = predicted_result(turn->built, protocol_);
      if (device_ == "cuda") {
        // A compile error is a fact; a built candidate has no result until the GPU gives one.
        r.result.predicted = false;
        r.result.device.clear();
        r.result.t_candidate.reset();
      }
      (void)write_file(r.out_dir / "build.log", build_log_text(turn->built.build));
      line = r.built ? "built in " + format_seconds(r.build_seconds) : "compile error";
      torch = turn->graph.torch_version;
    }
    // Final now, unless it waits for the GPU (then it stays out of the tables until verified).
    const bool waits_for_gpu = device_ == "cuda" && r.built;
    r.skipped = waits_for_gpu;
    std::lock_guard<std::mutex> lock(mu_);
    records_[i] = r;
    if (torch_.empty()) torch_ = torch;
    progress(r, line);
    if (waits_for_gpu) {
      to_verify_.push_back(i);
      built_cv_.notify_one();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  --builders_left_;
  built_cv_.notify_all();
}

void BenchRun::verify_loop() {
  sandbox::HarnessWorker worker;
  // Warms the baseline cache for the serial profile phase; a worker of its own, because the cache is
  // writable only where no candidate runs (sandbox/isolation.h).
  sandbox::HarnessWorker baselines({.baselines_writer = true});
  for (;;) {
    size_t i;
    {
      std::unique_lock<std::mutex> lock(mu_);
      built_cv_.wait(lock, [&] { return !to_verify_.empty() || builders_left_ == 0; });
      if (to_verify_.empty()) return;
      if (past_time_limit()) return;  // the rest stays unverified: not reached
      i = to_verify_.front();
      to_verify_.pop_front();
    }
    BenchRecord& r = records_[i];
    const sandbox::EvalRequest req = verify_request(r);
    auto t0 = std::chrono::steady_clock::now();
    auto res = worker.evaluate(req);
    BenchRecord safer;  // the fallback's candidate when the first one was wrong (built outside the lock)
    const bool fell_back = res.is_ok() && falls_back(res->outcome) && fall_back(r, res.value(), worker, safer);
    bool warm_baselines = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fell_back) {
        r = std::move(safer);
        res = r.result;
      }
      if (isolation_.empty()) isolation_ = worker.isolation();
      r.skipped = false;
      r.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!res.is_ok()) {
        r.result.outcome = sandbox::Outcome::kRuntimeFault;
        r.result.message = "kforge could not run the harness: " + res.status().message();
      } else {
        r.result = std::move(res).value();
        if (!r.result.torch_version.empty()) torch_ = r.result.torch_version;
      }
      progress(r, std::string("verify: ") + sandbox::outcome_name(r.result.outcome) +
                      (r.result.outcome == sandbox::Outcome::kOk ? "" : " " + r.result.message.substr(0, 100)));
      save();
      warm_baselines = args_.profile && r.result.outcome == sandbox::Outcome::kOk;
    }
    if (warm_baselines) precompile_baselines(baselines, r);
  }
}

void BenchRun::precompile_baselines(sandbox::HarnessWorker& baselines, BenchRecord& r) {
  auto s = baselines.precompile(r.problem.path, protocol_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.is_ok()) {
    progress(r, "baselines not precompiled (profile compiles them): " + s.status().message().substr(0, 100));
    return;
  }
  r.compile_cold_seconds = s.value();  // the precompile is torch.compile's cold first call
  save();
}

bool BenchRun::fall_back(const BenchRecord& r, const sandbox::EvalResult& first, sandbox::HarnessWorker& worker,
                         BenchRecord& out) {
  out = r;
  Json last_schedule = written_schedule(r.out_dir);
  out.attempts.push_back(attempt_json("default", first, last_schedule, r.out_dir));
  out.result = first;
  for (const auto& fb : fallback_plans(plan_options(args_.common))) {
    if (past_time_limit()) break;
    const fs::path dir = r.out_dir.parent_path() / (r.out_dir.filename().string() + "." + fb.name);
    auto turn = import_plan_build(r.problem.path.string(), protocol_, dir,
                                  {.plan = fb.plan, .force = true, .jobs = build_jobs_});
    if (!turn.is_ok() || !turn->built.build.ok) {
      progress(r, "fallback " + fb.name + ": not built");
      continue;
    }
    Json sched = written_schedule(dir);
    if (same_program(sched, last_schedule)) continue;  // as the attempt before: nothing new to learn
    last_schedule = sched;
    sandbox::EvalRequest req = verify_request(r);
    req.candidate = dir / "model_new.py";
    auto res = worker.evaluate(req);
    if (!res.is_ok()) break;
    out.attempts.push_back(attempt_json(fb.name, res.value(), sched, dir));
    progress(r, "fallback " + fb.name + ": " + sandbox::outcome_name(res->outcome));
    if (res->outcome != sandbox::Outcome::kOk) continue;
    out.out_dir = dir;
    out.result = std::move(res).value();
    out.floor_seconds = turn->built.cost.floor_seconds;
    out.predicted_seconds = turn->built.cost.seconds;
    out.features = costmodel::candidate_features(turn->graph, turn->sched, turn->built.cost);
    out.schedule_hash = costmodel::schedule_hash(turn->graph, turn->sched);
    break;
  }
  return true;
}

// Parallel workers share the GPU's memory, so a big problem can run out of it only because its
// neighbours hold theirs. Those candidates are verified again one at a time, the GPU to themselves:
// only a candidate that runs out of memory alone keeps resource_exhausted.
void BenchRun::reverify_alone() {
  sandbox::HarnessWorker worker;
  for (auto& r : records_) {
    if (r.skipped || r.result.outcome != sandbox::Outcome::kResourceExhausted) continue;
    if (past_time_limit()) return;
    auto res = worker.evaluate(verify_request(r));
    std::lock_guard<std::mutex> lock(mu_);
    if (res.is_ok()) r.result = std::move(res).value();
    progress(r, std::string("verify alone: ") + sandbox::outcome_name(r.result.outcome) +
                    (r.result.outcome == sandbox::Outcome::kOk ? "" : " " + r.result.message.substr(0, 100)));
    save();
  }
}

void BenchRun::profile_all() {
  sandbox::HarnessWorker worker;
  for (auto& r : records_) {
    if (r.skipped || r.result.outcome != sandbox::Outcome::kOk || r.result.predicted || r.result.t_candidate) continue;
    if (past_time_limit()) {
      r.result.message = "not timed: --time-limit reached";
      continue;
    }
    sandbox::EvalRequest req = verify_request(r);
    req.verify = false;  // verified above, on fresh inputs
    req.profile = true;
    req.trials = args_.trials;
    req.timeout_seconds = 600;
    auto res = worker.evaluate(req);
    std::lock_guard<std::mutex> lock(mu_);
    if (!res.is_ok() || res->outcome != sandbox::Outcome::kOk) {
      // The candidate was verified correct; a profiling failure is recorded, not a verdict.
      r.result.message = "profile failed: " + (res.is_ok() ? res->message : res.status().message());
      progress(r, r.result.message.substr(0, 120));
      continue;
    }
    r.result.t_candidate = res->t_candidate;
    r.result.t_eager = res->t_eager;
    r.result.t_compile = res->t_compile;
    r.result.t_compile_tf32 = res->t_compile_tf32;
    r.result.other_streams = res->other_streams;
    r.result.cuda_graph = res->cuda_graph;
    r.result.t_candidate_repeat = res->t_candidate_repeat;
    r.result.t_eager_repeat = res->t_eager_repeat;
    r.result.t_candidate_wall = res->t_candidate_wall;
    r.result.samples = res->samples;
    r.result.t_baselines = res->t_baselines;
    r.result.compile_seconds = res->compile_seconds;
    r.result.timing_method = res->timing_method;
    r.result.fresh_inputs = res->fresh_inputs;
    char line[160];
    std::snprintf(line, sizeof line, "candidate %s  eager %s  compile %s  reward %d",
                  format_seconds(res->t_candidate.value_or(0)).c_str(),
                  format_seconds(res->t_eager.value_or(0)).c_str(),
                  res->t_compile ? format_seconds(*res->t_compile).c_str() : "-",
                  sandbox::milestone_reward(r.result).value_or(0));
    progress(r, line);
    record_measurement(r);
    save();
  }
}

void BenchRun::record_measurement(const BenchRecord& r) {
  if (!db_) return;
  auto m = measurement_of(r, report());
  if (!m) return;
  Status st = db_->record(*m);
  if (!st.is_ok()) progress(r, "not recorded in " + args_.db + ": " + st.message());
}

OrderedJson BenchRun::report() const {
  OrderedJson j;
  j["format"] = "kforge.bench/1";
  j["device"] = device_ == "cuda" ? [&] {
    for (const auto& r : records_)
      if (!r.result.device.empty() && !r.result.predicted) return r.result.device;
    return std::string("cuda");
  }()
                                  : std::string("cpu (roofline of NVIDIA H200)");
  j["torch"] = torch_;
  j["protocol"] = protocol_.name;
  j["commit"] = kforge_commit();
  j["date"] = today_utc();
  j["suite"] = fs::absolute(args_.suite).lexically_normal().string();
  j["predicted"] = device_ != "cuda";
  j["disabled_skills"] = args_.common.disabled_skills;
  if (!isolation_.empty()) j["isolation"] = isolation_;
  j["method"] = device_ == "cuda"
                    ? "verify: 5 fresh input sets, outputs poisoned, protocol tolerance; profile: warm-up, " +
                          std::to_string(args_.trials) +
                          " interleaved trials of candidate / eager / torch.compile (default mode, compiled "
                          "before timing), L2 flushed before each, CUDA events, median"
                    : "no GPU: candidates built with nvcc, times predicted by the roofline cost model, "
                      "correctness not verified";
  OrderedJson summary;
  for (const auto& [level, rs] : by_level(records_)) summary[level] = metrics_json(metrics_of(rs));
  j["summary"] = summary;
  j["problems"] = OrderedJson::array();
  int skipped = 0;
  for (const auto& r : records_) {
    if (r.skipped) {
      ++skipped;
    } else {
      j["problems"].push_back(record_json(r));
    }
  }
  j["skipped_for_time_limit"] = skipped;
  return j;
}

void BenchRun::save() {
  std::string text = report().dump(1) + "\n";
  (void)write_file(out_ / "bench.json", text);
  if (!args_.json_out.empty()) (void)write_file(args_.json_out, text);
}

int BenchRun::write_bench_bundle(const OrderedJson& rep) const {
  std::vector<BundleProblem> problems;
  for (const auto& r : records_) {
    if (r.skipped) continue;
    problems.push_back({r.problem.level, r.problem.name, r.problem.path, r.out_dir, record_json(r)});
  }
  OrderedJson header = rep;
  header.erase("problems");
  auto n = write_bundle(args_.bundle, problems,
                        {.command = "bench", .header = header, .protocol = protocol_, .common = args_.common});
  if (!n.is_ok()) return report_error(n.status(), "bench");
  std::cout << "wrote the audit bundle " << args_.bundle << " (" << n.value()
            << " problems; tar -xzf it and read kforge-bundle/README.md)\n";
  return kExitOk;
}

int BenchRun::run() {
  int jobs =
      args_.common.jobs > 0 ? args_.common.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(records_.size()));
  if (resumed_ > 0) std::fprintf(stderr, "kforge bench: resuming: %d problems already have results\n", resumed_);
  std::fprintf(stderr, "kforge bench: %zu problems, protocol %s, device %s, %d build jobs%s\n", records_.size(),
               protocol_.name.c_str(), device_.c_str(), jobs,
               device_ == "cuda" ? (", " + std::to_string(args_.workers) + " verify workers").c_str()
                                 : " (no GPU: times are PREDICTED, correctness NOT verified)");
  builders_left_ = jobs;
  build_jobs_ = jobs;
  // Every problem's build may use all the jobs; together they never run more than `jobs` nvcc at once.
  sandbox::set_process_nvcc_limit(jobs);
  std::vector<std::thread> threads;
  for (int i = 0; i < jobs; ++i) threads.emplace_back([this] { build_loop(); });
  if (device_ == "cuda") {
    for (int i = 0; i < args_.workers; ++i) threads.emplace_back([this] { verify_loop(); });
  }
  for (auto& t : threads) t.join();
  if (device_ == "cuda") reverify_alone();
  if (device_ == "cuda" && args_.profile) profile_all();
  {
    std::lock_guard<std::mutex> lock(mu_);
    save();
  }
  std::vector<const BenchRecord*> failed;
  int skipped = 0;
  for (const auto& r : records_) {
    if (r.skipped) {
      ++skipped;
    } else if (r.result.outcome != sandbox::Outcome::kOk) {
      failed.push_back(&r);
    }
  }
  if (!failed.empty()) {
    std::cout << "failures:\n";
    for (const auto* r : failed) {
      std::string msg = r->result.message;
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      std::cout << "  " << r->problem.level << "/" << r->problem.name << ": "
                << sandbox::outcome_name(r->result.outcome) << ": " << msg.substr(0, 160) << "\n";
    }
    std::cout << "\n";
  }
  OrderedJson rep = report();
  std::cout << "kforge bench " << args_.suite << "  (protocol " << protocol_.name << ", device "
            << rep["device"].get<std::string>() << ", torch " << torch_ << ", commit "
            << rep["commit"].get<std::string>() << ", " << rep["date"].get<std::string>() << ")\n";
  if (device_ != "cuda") {
    std::cout << "No GPU: candidates were built, but correctness is NOT verified and times are PREDICTED by the "
                 "cost model.\n";
  }
  if (skipped > 0)
    std::cout << skipped << " problems not reached before --time-limit " << args_.time_limit
              << " s: left out of the table and the JSON\n";
  std::cout << summary_table(records_);
  std::cout << "pass = correct / problems; faster>X = correct and faster than X / problems; speedup = geometric "
               "mean of t_X / t over correct problems; floor/t = median cost-model floor over candidate time; noise = "
               "largest difference between two timings of the same candidate in the run\n";
  std::cout << "wrote " << (out_ / "bench.json").string();
  if (!args_.json_out.empty()) std::cout << " and " << args_.json_out;
  std::cout << "\n";
  write_html_report(out_ / "bench.json", out_ / "report.html", "bench");
  if (!args_.json_out.empty()) {
    fs::path beside = fs::path(args_.json_out).parent_path() / "report.html";
    if (fs::absolute(beside) != fs::absolute(out_ / "report.html")) write_html_report(args_.json_out, beside, "bench");
  }
  if (!args_.bundle.empty()) {
    if (int code = write_bench_bundle(rep); code != kExitOk) return code;
  }
  return failed.empty() ? kExitOk : kExitFailedResult;
}

}  // namespace

int run_bench(const BenchArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) {
    std::fprintf(stderr, "kforge bench: error: %s\n", protocol.status().message().c_str());
    return kExitUserError;
  }
  for (const auto& name : a.common.disabled_skills) {
    if (skills::find_skill(name) == nullptr) {
      std::fprintf(stderr, "kforge bench: error: --disable-skill %s: no such skill (see docs/skills.md)\n",
                   name.c_str());
      return kExitUserError;
    }
  }
  auto device = resolve_device(a.device);
  auto problems = find_problems(a);
  for (const Status& s : {device.status(), problems.status()}) {
    if (!s.is_ok()) {
      std::fprintf(stderr, "kforge bench: error: %s\n", s.message().c_str());
      return kExitUserError;
    }
  }
  fs::path out = a.out_dir.empty()
                     ? fs::path("out") / ("bench-" + fs::absolute(a.suite).lexically_normal().filename().string() +
                                          "-" + protocol->name)
                     : fs::path(a.out_dir);
  Json earlier;
  if (a.resume) {
    auto text = read_file(out / "bench.json");
    if (!text.is_ok()) {
      std::fprintf(stderr, "kforge bench: error: --resume: no earlier run in %s (%s)\n", out.c_str(),
                   text.status().message().c_str());
      return kExitUserError;
    }
    auto j = parse_json(text.value(), (out / "bench.json").string());
    if (!j.is_ok()) {
      std::fprintf(stderr, "kforge bench: error: --resume: %s\n", j.status().message().c_str());
      return kExitUserError;
    }
    earlier = std::move(j).value();
  } else if (std::error_code ec; fs::exists(out / "bench.json", ec) && !a.force) {
    std::fprintf(stderr,
                 "kforge bench: error: %s holds an earlier run (bench.json); pass --resume to continue it, --force to "
                 "start over, or pick another --out\n",
                 out.c_str());
    return kExitUserError;
  }
  if (!a.bundle.empty()) {
    if (auto s = check_bundle_target(a.bundle, a.force); !s.is_ok()) {
      std::fprintf(stderr, "kforge bench: error: %s\n", s.message().c_str());
      return kExitUserError;
    }
  }
  if (auto s = prepare_out_dir(out, a.force || a.resume); !s.is_ok()) {
    std::fprintf(stderr, "kforge bench: error: %s\n", s.message().c_str());
    return kExitUserError;
  }
  if (!a.json_out.empty() && !a.resume) {
    std::error_code ec;
    if (fs::exists(a.json_out, ec) && !a.force) {
      std::fprintf(stderr, "kforge bench: error: %s exists; pick another --json, or pass --force to overwrite it\n",
                   a.json_out.c_str());
      return kExitUserError;
    }
  }
  BenchRun run(a, protocol.value(), device.value(), std::move(problems).value(), out);
  if (a.resume) {
    if (auto s = run.resume_from(earlier); !s.is_ok()) {
      std::fprintf(stderr, "kforge bench: error: %s\n", s.message().c_str());
      return kExitUserError;
    }
  }
  if (auto s = run.open_db(); !s.is_ok()) {
    std::fprintf(stderr, "kforge bench: error: --db: %s\n", s.message().c_str());
    return kExitUserError;
  }
  if (!a.db.empty() && device.value() != "cuda")
    std::fprintf(stderr,
                 "kforge bench: --db %s: nothing is recorded without a GPU (predicted times are not measurements)\n",
                 a.db.c_str());
  return run.run();
}

}  // namespace kforge::cli
