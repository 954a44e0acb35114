// run_synth: arguments, dataset directory, worker threads over candidate indices, finalization.
#include "synth/run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "synth/candidate.h"
#include "synth/dataset.h"
#include "synth/report.h"

namespace kforge::synth {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string duration_text(double s) {
  char buf[32];
  if (s < 90) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else if (s < 5400) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  }
  return buf;
}

// Which candidate indices are done, which are next, and when to stop. Thread-safe.
class CandidateQueue {
 public:
  CandidateQueue(const std::map<int64_t, CandidateRecord>& done, int count, int64_t max_candidates)
      : count_(count), max_candidates_(max_candidates) {
    int64_t next = 0;
    for (const auto& [index, r] : done) {
      for (; next < index; ++next) gaps_.push_back(next);
      next = index + 1;
      accepted_ += r.accepted;
    }
    next_ = next;
  }

  // The next index to evaluate, or -1 when enough tasks are accepted (or the run must stop).
  int64_t take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || accepted_ >= count_) return -1;
    if (!gaps_.empty()) {
      int64_t i = gaps_.front();
      gaps_.erase(gaps_.begin());
      return i;
    }
    if (next_ >= max_candidates_) {
      exhausted_ = true;
      return -1;
    }
    return next_++;
  }
  void finished(bool accepted) {
    std::lock_guard<std::mutex> lock(mu_);
    accepted_ += accepted;
    ++finished_;
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  int64_t accepted() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_;
  }
  int64_t finished_here() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  bool exhausted() {
    std::lock_guard<std::mutex> lock(mu_);
    return exhausted_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> gaps_;  // indices below next_ not finished by an earlier run
  int64_t next_ = 0;
  int64_t accepted_ = 0;
  int64_t finished_ = 0;
  int count_;
  int64_t max_candidates_;
  bool stop_ = false;
  bool exhausted_ = false;
};

StatusOr<std::vector<BenchmarkProblem>> fingerprint_benchmarks(
    const std::vector<std::pair<std::string, fs::path>>& files, SynthWorker& worker) {
  std::vector<BenchmarkProblem> out;
  if (files.empty()) return out;
  Json paths = Json::array();
  for (const auto& f : files) paths.push_back(fs::absolute(f.second).string());
  KF_ASSIGN_OR_RETURN(Json answer, worker.request({{"cmd", "features"}, {"paths", paths}}, 600));
  for (size_t i = 0; i < files.size(); ++i) {
    const Json& err = answer["errors"][i];
    if (!err.is_null()) {
      return invalid_argument("cannot parse the benchmark problem " + files[i].second.string() + ": " +
                              err.get<std::string>());
    }
    KF_ASSIGN_OR_RETURN(Fingerprint fp, fingerprint_from_json(answer["features"][i]));
    out.push_back({files[i].first, std::move(fp)});
  }
  return out;
}

struct Workers {
  std::vector<std::unique_ptr<SynthWorker>> pool;
  std::string torch_version;
  bool torch_compile = false;
};

// `jobs` workers; the first is started and asked what torch it has (a missing torch is said here).
StatusOr<Workers> start_workers(int jobs) {
  Workers w;
  for (int i = 0; i < jobs; ++i) w.pool.push_back(std::make_unique<SynthWorker>());
  auto hello = w.pool[0]->request({{"cmd", "hello"}}, 120);
  if (!hello.is_ok()) {
    std::string msg = hello.status().message();
    const std::string prefix = "the synth worker failed: ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    return external_error(msg);
  }
  w.torch_version = (*hello).value("torch", "?");
  w.torch_compile = (*hello).value("compile", false);
  return w;
}

std::string progress_line(int64_t accepted, int count, size_t done, int64_t evaluated_here, int64_t accepted_here,
                          double elapsed) {
  char line[256];
  std::snprintf(line, sizeof line,
                "kforge synth: %lld/%d accepted, %zu candidates done (%.0f%% kept), %.1f candidates/s",
                static_cast<long long>(accepted), count, done,
                done ? 100.0 * static_cast<double>(accepted) / static_cast<double>(done) : 0.0,
                elapsed > 0 ? static_cast<double>(evaluated_here) / elapsed : 0.0);
  std::string text = line;
  const double rate = elapsed > 0 ? static_cast<double>(accepted_here) / elapsed : 0;
  if (rate > 0 && accepted < count)
    text += ", about " + duration_text(static_cast<double>(count - accepted) / rate) + " left";
  return text;
}

// Evaluates candidates on one thread per worker until the schedule says stop; each finished
// candidate goes to the dataset's journal and into `records`. Progress every interval.
Status run_candidates(const SynthContext& ctx, const SynthOptions& o, Workers& workers, DatasetDir& dir,
                      std::map<int64_t, CandidateRecord>& records, CandidateQueue& schedule, int64_t accepted_before) {
  const auto t0 = Clock::now();
  std::mutex mu;  // guards records, dir, fatal
  Status fatal;
  std::condition_variable cv;
  std::atomic<int> running{static_cast<int>(workers.pool.size())};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < workers.pool.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int64_t index = schedule.take(); index >= 0; index = schedule.take()) {
        CandidateRecord r = evaluate_candidate(ctx, index, *workers.pool[t]);
        std::lock_guard<std::mutex> lock(mu);
        Status s = dir.append(r);
        if (!s.is_ok()) {
          if (fatal.is_ok()) fatal = s;
          schedule.stop();
          break;
        }
        schedule.finished(r.accepted);
        records[index] = std::move(r);
      }
      running--;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    auto last = Clock::now();
    while (running > 0) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (since(last) < o.progress_interval_seconds || running == 0 || !o.progress) continue;
      last = Clock::now();
      const int64_t acc = schedule.accepted();
      std::string line =
          progress_line(acc, o.count, records.size(), schedule.finished_here(), acc - accepted_before, since(t0));
      lock.unlock();
      o.progress(line);
      lock.lock();
    }
  }
  for (auto& th : threads) th.join();
  return fatal;
}

// The dataset: every candidate, in order, up to the one that brought the count-th acceptance.
StatusOr<std::vector<CandidateRecord>> dataset_prefix(std::map<int64_t, CandidateRecord>& records, int count) {
  std::vector<CandidateRecord> kept;
  int64_t accepted = 0;
  int64_t expected = 0;
  for (auto& [index, r] : records) {
    if (accepted >= count) break;
    if (index != expected) return internal_error("candidate " + std::to_string(expected) + " is missing from the run");
    ++expected;
    accepted += r.accepted;
    kept.push_back(std::move(r));
  }
  return kept;
}

}  // namespace

StatusOr<std::vector<std::pair<std::string, fs::path>>> benchmark_files(const std::vector<fs::path>& dirs) {
  std::vector<std::pair<std::string, fs::path>> out;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return invalid_argument("--against " + dir.string() + ": no such directory");
    if (!fs::is_directory(dir, ec))
      return invalid_argument("--against " + dir.string() + " is not a directory (give directories of problems)");
    std::string name = fs::absolute(dir).lexically_normal().filename().string();
    if (name.empty()) name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
    std::vector<std::pair<std::string, fs::path>> found;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file() && it->path().extension() == ".py") {
        found.push_back({name + "/" + fs::relative(it->path(), dir).generic_string(), it->path()});
      }
    }
    if (ec) return invalid_argument("cannot read --against " + dir.string() + ": " + ec.message());
    if (found.empty()) return invalid_argument("--against " + dir.string() + " holds no problems (.py files)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

StatusOr<SynthSummary> run_synth(const SynthOptions& o) {
  const auto t0 = Clock::now();
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.count < 1) return invalid_argument("--count must be at least 1");
  if (o.max_ops < 1 || o.max_ops > 8) return invalid_argument("--max-ops must be between 1 and 8");
  KF_ASSIGN_OR_RETURN(auto bench_files, benchmark_files(o.against));
  DatasetManifest manifest{o.seed, o.max_ops, {}};
  for (const auto& d : o.against) manifest.against.push_back(fs::absolute(d).lexically_normal().string());
  KF_ASSIGN_OR_RETURN(DatasetDir dir, DatasetDir::open(o.out, manifest, o.resume));

  const int jobs = o.jobs > 0 ? o.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  KF_ASSIGN_OR_RETURN(Workers workers, start_workers(jobs));
  SynthContext ctx;
  ctx.seed = o.seed;
  ctx.compose.max_ops = o.max_ops;
  KF_ASSIGN_OR_RETURN(ctx.benchmarks, fingerprint_benchmarks(bench_files, *workers.pool[0]));
  KF_ASSIGN_OR_RETURN(auto records, dir.load_finished());
  int64_t accepted_before = 0;
  for (const auto& [i, r] : records) accepted_before += r.accepted;

  std::string against_names;
  for (const auto& d : o.against) against_names += (against_names.empty() ? "" : ", ") + d.string();
  say("kforge synth: seed " + std::to_string(o.seed) + ", " + std::to_string(o.count) + " tasks into " +
      o.out.string() + " with " + std::to_string(jobs) + " worker" + (jobs > 1 ? "s" : "") + "; torch " +
      workers.torch_version + (workers.torch_compile ? "" : " (no torch.compile: that stage is skipped)") +
      "; contamination check against " + std::to_string(ctx.benchmarks.size()) + " problems" +
      (against_names.empty() ? " (no --against given)" : " in " + against_names) +
      "; runtimes are PREDICTED by the cost model");
  if (!records.empty()) {
    say("kforge synth: resuming: " + std::to_string(records.size()) + " candidates already done, " +
        std::to_string(accepted_before) + " accepted");
  }

  CandidateQueue schedule(records, o.count, static_cast<int64_t>(o.count) * 100 + 1000);
  KF_RETURN_IF_ERROR(run_candidates(ctx, o, workers, dir, records, schedule, accepted_before));
  workers.pool.clear();
  if (schedule.exhausted() && schedule.accepted() < o.count) {
    return internal_error("only " + std::to_string(schedule.accepted()) + " of " + std::to_string(o.count) +
                          " tasks were accepted after " + std::to_string(records.size()) +
                          " candidates; the filters reject nearly everything (see " +
                          (o.out / "journal.jsonl").string() + ")");
  }
  KF_ASSIGN_OR_RETURN(std::vector<CandidateRecord> kept, dataset_prefix(records, o.count));

  ReportContext rc;
  rc.seed = o.seed;
  rc.count = o.count;
  rc.max_ops = o.max_ops;
  for (const auto& d : o.against) rc.against.push_back(fs::absolute(d).lexically_normal().filename().string());
  rc.benchmark_problems = static_cast<int>(ctx.benchmarks.size());
  rc.torch_version = workers.torch_version;
  rc.torch_compile = workers.torch_compile;
  SynthSummary summary;
  summary.report = build_report(kept, rc);
  summary.report_text = report_tables(summary.report);
  KF_RETURN_IF_ERROR(dir.finalize(kept, o.seed, summary.report, summary.report_text));
  summary.candidates_run = schedule.finished_here();
  summary.seconds = since(t0);
  say("kforge synth: done: " + std::to_string(summary.report["accepted"].get<int64_t>()) + " tasks from " +
      std::to_string(kept.size()) + " candidates in " + duration_text(summary.seconds) + " (" +
      std::to_string(summary.candidates_run) + " evaluated by this run); dataset in " + o.out.string());
  return summary;
}

}  // namespace kforge::synth
