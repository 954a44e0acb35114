// kforge explore (explore_command.h): exhaustive search over the skills, every state recorded.
#include "cli/explore_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "agent/action_space.h"
#include "agent/evaluation_log.h"
#include "agent/evaluator_factory.h"
#include "agent/policy.h"
#include "agent/tasks.h"
#include "base/files.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/options.h"

namespace kforge::cli {

namespace fs = std::filesystem;

CLI::App* add_explore_subcommand(CLI::App& app, ExploreArgs& a) {
  auto* cmd = app.add_subcommand(
      "explore",
      "evaluate every schedule the skills reach from each problem (exhaustive search) and record each evaluation, "
      "so that `kforge train --eval-tasks ... --replay LOG` can compare the policies on them");
  cmd->add_option("tasks", a.tasks, "suite directories (level*/N_*.py) or problem files")->required();
  cmd->add_option("--record", a.record, "the evaluation log to write (JSON lines)")->required();
  cmd->add_option("--device", a.device,
                  "auto (cuda where there is a GPU), cpu (cost model, predicted) or cuda (every state built, "
                  "verified and timed)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  add_protocol_option(cmd, a.protocol);
  cmd->add_option("--only", a.only, "comma-separated problem names (file stems)");
  cmd->add_option("--out", a.out, "where the candidates are built (default: the log's name + .candidates)");
  cmd->add_option("--max-states", a.max_states,
                  "states per problem at most: on the GPU a problem with more is left out; on the cost model its "
                  "search stops there and its summary says capped")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trials", a.trials, "timed trials per variant on the GPU")->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", a.jobs,
                  "parallel nvcc builds on the GPU machine (default: every core; two fewer while measuring)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time-limit", a.time_limit,
                  "seconds; nothing new is measured after this; a problem stopped midway continues with --resume "
                  "without measuring again what the log holds")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--db", a.db, "also record every measured candidate in this measurement database (SQLite)");
  cmd->add_option("--json", a.json_out, "write the per-problem summary here");
  cmd->add_flag("--no-compile", a.no_compile,
                "on the GPU, time the candidate and eager only: torch.compile is compiled again for every state "
                "(seconds each), and the speed-up the policies are compared by is over eager");
  cmd->add_flag("--eager-once", a.eager_once,
                "on the GPU, time eager once per problem (with its first correct state) and give the problem's "
                "other states those times: eager is the same reference model every time");
  cmd->add_flag("--resume", a.resume,
                "append to an existing log: skip the problems it has finished, and answer the states it holds from "
                "it (a problem stopped midway is not measured again)");
  cmd->add_flag("--force", a.force, "discard an existing log and start again");
  cmd->add_flag("--dry-run", a.dry_run,
                "with --reuse: list the problems that would be explored (their reachable programs changed) and "
                "write nothing");
  cmd->add_option("--reuse", a.reuse,
                  "earlier logs (e.g. explored with another skill catalogue): a problem they finished whose every "
                  "program reachable today they hold is copied from them into --record, not measured again; only "
                  "the problems whose reachable programs changed are explored");
  return cmd;
}

namespace {

// Remembers every schedule it is asked about (the programs exhaustive search evaluates), then answers with
// the evaluator it wraps. The environment evaluates its own copy of a task, so `seen` points at the
// caller's (found by name).
class CollectingEvaluator : public agent::Evaluator {
 public:
  CollectingEvaluator(std::shared_ptr<agent::Evaluator> inner, const std::vector<const agent::Task*>& tasks)
      : inner_(std::move(inner)) {
    for (const auto* t : tasks) tasks_[t->name] = t;
  }
  std::string name() const override { return inner_->name(); }
  StatusOr<agent::Evaluation> evaluate(const agent::Task& task, const schedule::Schedule& s) override {
    auto it = tasks_.find(task.name);
    if (it == tasks_.end()) return internal_error("explore: a state of an unknown task '" + task.name + "'");
    seen.emplace_back(it->second, s);
    return inner_->evaluate(task, s);
  }
  std::vector<std::pair<const agent::Task*, schedule::Schedule>> seen;

 private:
  std::shared_ptr<agent::Evaluator> inner_;
  std::map<std::string, const agent::Task*> tasks_;
};

// What --resume and --time-limit need around the recording evaluator: a state the log already holds
// (a problem interrupted in the middle) is answered from the log, not measured again; after the
// deadline, nothing new is measured (the problem stops there, its states so far kept in the log).
class ResumingEvaluator : public agent::Evaluator {
 public:
  ResumingEvaluator(std::shared_ptr<agent::Evaluator> inner, std::map<std::string, agent::Evaluation> recorded,
                    std::optional<std::chrono::steady_clock::time_point> deadline)
      : inner_(std::move(inner)), recorded_(std::move(recorded)), deadline_(deadline) {}
  std::string name() const override { return inner_->name(); }
  bool measured() const override { return inner_->measured(); }
  StatusOr<agent::Evaluation> evaluate(const agent::Task& task, const schedule::Schedule& s) override {
    auto it = recorded_.find(agent::evaluation_key(task, s));
    if (it != recorded_.end()) return it->second;
    if (deadline_ && std::chrono::steady_clock::now() > *deadline_) {
      expired_ = true;
      return unsupported("--time-limit reached");
    }
    return inner_->evaluate(task, s);
  }
  bool recorded(const agent::Task& task, const schedule::Schedule& s) const {
    return recorded_.count(agent::evaluation_key(task, s)) > 0;
  }
  bool expired() const { return expired_; }

 private:
  std::shared_ptr<agent::Evaluator> inner_;
  std::map<std::string, agent::Evaluation> recorded_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool expired_ = false;
};

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& x : items) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string stem_of(const std::string& task_name) {
  auto slash = task_name.rfind('/');
  return slash == std::string::npos ? task_name : task_name.substr(slash + 1);
}

std::string ms(const std::optional<double>& s) {
  return s ? fixed(*s * 1e3, 3) + " ms" : std::string("-");
}

// Explores one task with the exhaustive policy on `evaluator`; returns its summary line.
StatusOr<OrderedJson> explore_task(const agent::Task& task, std::shared_ptr<agent::Evaluator> evaluator,
                                   int max_states) {
  auto t0 = std::chrono::steady_clock::now();
  // Each program once: exhaustive search's replay of its best path, and a state that builds a program
  // measured before, find it in the cache.
  auto cached = std::make_shared<agent::CachedEvaluator>(std::move(evaluator));
  agent::Environment env(cached, {.max_turns = max_states + 1});
  auto policy = agent::make_exhaustive_policy(max_states);
  KF_ASSIGN_OR_RETURN(agent::Episode ep, agent::run_episode(env, *policy, task, /*seed=*/0));
  OrderedJson j;
  j["task_done"] = task.name;
  j["protocol"] = task.protocol;
  j["states"] = cached->states();
  j["programs"] = cached->forwarded();
  j["capped"] = ep.policy != "exhaustive";
  j["reward"] = ep.reward;
  const auto& best = env.observation().best;
  auto opt = [](const std::optional<double>& v) { return v ? OrderedJson(*v) : OrderedJson(nullptr); };
  j["t_best"] = best ? opt(best->result.t_candidate) : OrderedJson(nullptr);
  j["t_eager"] = best ? opt(best->result.t_eager) : OrderedJson(nullptr);
  j["t_compile"] = best ? opt(best->result.t_compile) : OrderedJson(nullptr);
  j["predicted"] = ep.predicted;
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return j;
}

using StatesOf = std::map<const agent::Task*, std::vector<std::pair<const agent::Task*, schedule::Schedule>>>;

// The programs exhaustive search reaches from each task of `todo` today, found with the cost model (one
// entry per distinct program). A capped search is left out of the map; with `drop_capped` its task also
// leaves `todo` and is named in `capped`.
StatusOr<StatesOf> find_states(std::vector<const agent::Task*>* todo, int max_states, bool drop_capped,
                               std::vector<std::string>* capped) {
  StatesOf states_of;
  std::vector<const agent::Task*> kept;
  for (const auto* t : *todo) {
    auto collector = std::make_shared<CollectingEvaluator>(*agent::make_evaluator("cpu", {}), *todo);
    KF_ASSIGN_OR_RETURN(OrderedJson r, explore_task(*t, collector, max_states));
    if (!r["capped"].get<bool>()) {
      states_of[t] = std::move(collector->seen);
    } else if (drop_capped) {
      capped->push_back(t->name);
      continue;
    }
    kept.push_back(t);
  }
  *todo = std::move(kept);
  return states_of;
}

// A task --reuse copies: the earlier logs finished it (not capped) and hold every program it reaches today.
struct Reusable {
  const agent::Task* task;
  const agent::TaskRecords* records;
  std::vector<std::string> programs;  // today's, in the order the search reached them
};

// Moves the tasks of `todo` that `records` cover (reusable_tasks) out of it.
std::vector<Reusable> take_reusable(const std::map<std::string, agent::TaskRecords>& records, const StatesOf& states_of,
                                    std::vector<const agent::Task*>* todo) {
  std::vector<Reusable> reusable;
  std::vector<const agent::Task*> left;
  for (const auto* t : *todo) {
    auto states = states_of.find(t);
    auto rec = records.find(agent::task_records_key(t->name, t->protocol));
    bool covered =
        states != states_of.end() && rec != records.end() && !rec->second.done_line.empty() && !rec->second.capped;
    Reusable r{t, covered ? &rec->second : nullptr, {}};
    if (covered) {
      std::set<std::string> seen;
      for (const auto& [task, s] : states->second) {
        std::string p = schedule::program_hash(task->graph, s);
        if (!rec->second.lines_by_program.count(p)) {
          covered = false;
          break;
        }
        if (seen.insert(p).second) r.programs.push_back(std::move(p));
      }
    }
    if (covered) {
      reusable.push_back(std::move(r));
    } else {
      left.push_back(t);
    }
  }
  *todo = std::move(left);
  return reusable;
}

// Copies each reusable task's lines (today's programs) and its task_done line, marked "reused_from".
Status copy_reused(const std::vector<Reusable>& reusable, const std::string& from,
                   agent::RecordingEvaluator& recorder) {
  for (const auto& r : reusable) {
    for (const auto& p : r.programs) {
      KF_RETURN_IF_ERROR(recorder.append(OrderedJson::parse(r.records->lines_by_program.at(p))));
    }
    OrderedJson done = OrderedJson::parse(r.records->done_line);
    done["programs"] = static_cast<int>(r.programs.size());
    done["reused_from"] = from;
    KF_RETURN_IF_ERROR(recorder.append(done));
  }
  return Status::ok();
}

int fail(const Status& s) {
  return report_error(s, "explore");
}

}  // namespace

int run_explore(const ExploreArgs& a) {
  auto start = std::chrono::steady_clock::now();
  const fs::path record(a.record);
  std::error_code ec;
  if (fs::exists(record, ec) && !a.resume && !a.force && !a.dry_run) {
    return fail(invalid_argument(a.record +
                                 " exists: --resume adds the problems it has not finished, --force starts it again"));
  }
  if (a.resume && a.force) return fail(invalid_argument("--resume and --force contradict each other: choose one"));
  for (const auto& r : a.reuse) {
    if (fs::exists(r, ec) && fs::exists(record, ec) && fs::equivalent(r, record, ec)) {
      return fail(invalid_argument("--reuse " + r + " is the --record log: record into a new file"));
    }
    if (!fs::exists(r, ec)) return fail(not_found("--reuse " + r + " does not exist"));
  }
  for (const auto& p : a.tasks) {
    if (!fs::exists(p, ec)) return fail(not_found(p + " does not exist: give suite directories or problem files"));
  }
  agent::TaskLoadOptions lo;
  lo.protocol = a.protocol;
  lo.progress = [](int done, int total) {
    if (done == total || done % 25 == 0) std::fprintf(stderr, "kforge explore: imported %d/%d problems\n", done, total);
  };
  auto loaded = agent::load_tasks(a.tasks, lo);
  if (!loaded.is_ok()) return fail(loaded.status());
  for (const auto& s : loaded->skipped) std::fprintf(stderr, "kforge explore: skipped %s\n", s.c_str());
  const std::set<std::string> only = split_list(a.only);
  std::vector<agent::Task> tasks;
  for (auto& t : loaded->tasks) {
    if (t.source.empty()) continue;
    if (only.empty() || only.count(stem_of(t.name))) tasks.push_back(std::move(t));
  }
  if (tasks.empty()) {
    return fail(not_found("no problems to explore in the given paths" +
                          std::string(only.empty() ? "" : " with --only " + a.only)));
  }
  std::set<std::string> finished;
  std::map<std::string, agent::Evaluation> recorded;  // the log's evaluations, for a problem begun before
  if (a.dry_run && a.reuse.empty()) {
    return fail(invalid_argument("--dry-run says which problems --reuse would leave to explore: give --reuse LOG"));
  }
  bool starts_log = a.force || !fs::exists(record, ec);
  if (a.resume && fs::exists(record, ec) && !a.dry_run) {
    auto log = agent::read_evaluation_logs({a.record});
    if (!log.is_ok()) return fail(log.status().with_context("--resume"));
    // A log goes on with the catalogue it began with: another one reaches other programs.
    const auto& version = log->versions.front().action_space;
    const bool empty = log->evaluations.empty() && log->tasks_done.empty();
    if (!empty && (!version || version->fingerprint != agent::action_space_fingerprint())) {
      return fail(invalid_argument("--resume " + a.record + ": " + agent::action_space_difference(version) +
                                   "; a log goes on only with the catalogue it began with: record a new log that "
                                   "reuses it instead (--reuse " +
                                   a.record + " --record NEW.jsonl)"));
    }
    for (const auto& d : log->tasks_done) {
      if (d.value("protocol", "") == a.protocol) finished.insert(d["task_done"].get<std::string>());
    }
    recorded = std::move(log->evaluations);
    starts_log = empty && !version;
  }
  if (a.force && !a.dry_run) fs::remove(record, ec);

  const fs::path work = a.out.empty() ? fs::path(a.record + ".candidates") : fs::path(a.out);
  agent::HarnessEvaluatorOptions gpu{
      .work_dir = work, .trials = a.trials, .compile_baseline = !a.no_compile, .eager_once = a.eager_once};
  std::unique_ptr<costmodel::MeasurementDb> db;
  if (!a.db.empty()) {
    auto opened = costmodel::MeasurementDb::open(a.db);
    if (!opened.is_ok()) return fail(opened.status());
    db = std::move(opened).value();
    gpu.db = db.get();
  }
  if (const char* c = std::getenv("KFORGE_COMMIT"); c && *c) gpu.commit = c;
  auto evaluator = agent::make_evaluator(a.device, gpu);
  if (!evaluator.is_ok()) return fail(evaluator.status());
  std::shared_ptr<agent::RecordingEvaluator> recorder;  // none in a dry run: nothing is written
  if (!a.dry_run) {
    auto opened = agent::RecordingEvaluator::open(*evaluator, record);
    if (!opened.is_ok()) return fail(opened.status());
    recorder = std::move(opened).value();
    if (starts_log) {
      Status st = recorder->append(agent::evaluation_log_header());
      if (!st.is_ok()) return fail(st);
    }
  }
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (a.time_limit > 0)
    deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(a.time_limit));
  auto resuming = std::make_shared<ResumingEvaluator>(
      recorder ? std::shared_ptr<agent::Evaluator>(recorder) : *evaluator, std::move(recorded), deadline);
  std::fprintf(stderr, "kforge explore: %zu problems (%zu finished before), judged by the %s, at most %d states each\n",
               tasks.size(), finished.size(), (*evaluator)->name().c_str(), a.max_states);

  std::vector<const agent::Task*> todo;
  for (const auto& t : tasks) {
    if (!finished.count(t.name)) todo.push_back(&t);
  }
  // On the GPU: each problem's states are found first with the cost model (the same search, so the
  // same states) and built in parallel on every core, a batch of problems at a time, before they are
  // measured; the measured search then finds them built. A problem with more than --max-states states
  // is left out rather than measured in part (a capped search is not exhaustive, and replay would lack
  // the states the other policies reach).
  auto* harness = dynamic_cast<agent::HarnessEvaluator*>(evaluator->get());
  std::vector<std::string> too_many;
  StatesOf states_of;
  if ((harness != nullptr || !a.reuse.empty()) && !todo.empty()) {
    // A capped search is left out on the GPU (and so in a dry run, which says what the GPU would do).
    auto found = find_states(&todo, a.max_states, /*drop_capped=*/harness != nullptr || a.dry_run, &too_many);
    if (!found.is_ok()) return fail(found.status());
    states_of = std::move(found).value();
    if (!too_many.empty()) {
      std::fprintf(stderr,
                   "kforge explore: %zu problems left out, more than %d states (raise --max-states):", too_many.size(),
                   a.max_states);
      for (const auto& n : too_many) std::fprintf(stderr, " %s", n.c_str());
      std::fprintf(stderr, "\n");
    }
  }
  // --reuse: a problem whose reachable programs today are all in the earlier logs, finished there, is copied.
  std::vector<std::string> reused;
  if (!a.reuse.empty()) {
    auto records = agent::read_task_records(a.reuse);
    if (!records.is_ok()) return fail(records.status().with_context("--reuse"));
    const auto reusable = take_reusable(*records, states_of, &todo);
    for (const auto& r : reusable) reused.push_back(r.task->name);
    std::fprintf(stderr,
                 "kforge explore: %zu problems reused from %s (their reachable programs unchanged), %zu to explore:",
                 reused.size(), join(a.reuse, ", ").c_str(), todo.size());
    for (const auto* t : todo) std::fprintf(stderr, " %s", t->name.c_str());
    std::fprintf(stderr, "\n");
    if (a.dry_run) {
      // The GPU's work: each problem to explore with its programs (what the cost model's search reaches).
      size_t programs = 0;
      for (const auto* t : todo) programs += states_of[t].size();
      std::cout << "dry run: " << reused.size() << " problems would be reused, " << todo.size() << " explored ("
                << programs << " programs), " << too_many.size() << " left out (more than --max-states states)\n";
      for (const auto* t : todo) std::cout << "explore " << t->name << " (" << states_of[t].size() << " programs)\n";
      for (const auto& n : too_many) std::cout << "left out " << n << "\n";
      return kExitOk;
    }
    Status copied = copy_reused(reusable, join(a.reuse, ", "), *recorder);
    if (!copied.is_ok()) return fail(copied);
  }
  const int threads = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr size_t kBatch = 8;  // problems built together before they are measured
  // The next batch builds while this one is measured, on all cores but two (the harness's processes).
  struct PendingBuild {
    std::vector<std::pair<const agent::Task*, schedule::Schedule>> states;
    size_t first = 0, last = 0;
    int threads = 1;
    std::chrono::steady_clock::time_point started;
    std::future<Status> done;
  };
  auto start_build = [&](size_t first, int build_threads) {
    auto p = std::make_unique<PendingBuild>();
    p->first = first;
    p->last = std::min(todo.size(), first + kBatch);
    p->threads = build_threads;
    for (size_t k = first; k < p->last; ++k) {
      for (auto& st : states_of[todo[k]]) {
        if (!resuming->recorded(*st.first, st.second)) p->states.push_back(std::move(st));
      }
    }
    p->started = std::chrono::steady_clock::now();
    PendingBuild* raw = p.get();
    p->done =
        std::async(std::launch::async, [harness, raw] { return harness->prebuild(raw->states, raw->threads, {}); });
    return p;
  };
  std::unique_ptr<PendingBuild> pending;

  OrderedJson summary = OrderedJson::array();
  Table table({"problem", "states", "programs", "correct best", "eager", "torch.compile", "best/compile", "seconds"});
  int left = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (a.time_limit > 0 && elapsed > a.time_limit) {
      left = static_cast<int>(todo.size() - i);
      break;
    }
    if (harness != nullptr && i % kBatch == 0) {
      if (!pending || pending->first != i) pending = start_build(i, threads);
      auto waited_from = std::chrono::steady_clock::now();
      Status built = pending->done.get();
      if (!built.is_ok()) return fail(built);
      auto now = std::chrono::steady_clock::now();
      std::fprintf(stderr,
                   "kforge explore: built the %zu programs of problems %zu-%zu on %d cores in %.0f s (measuring "
                   "waited %.0f s for them)\n",
                   pending->states.size(), i + 1, pending->last, pending->threads,
                   std::chrono::duration<double>(now - pending->started).count(),
                   std::chrono::duration<double>(now - waited_from).count());
      pending.reset();
      if (i + kBatch < todo.size()) pending = start_build(i + kBatch, std::max(1, threads - 2));
    }
    auto r = explore_task(*todo[i], resuming, a.max_states);
    // The search skips a state whose evaluation fails, so an expired deadline is checked here, whatever
    // the episode says: a problem cut short is not finished (no task_done line).
    if (resuming->expired()) {
      left = static_cast<int>(todo.size() - i);
      std::fprintf(stderr, "kforge explore: --time-limit reached inside %s; its states so far are in the log\n",
                   todo[i]->name.c_str());
      break;
    }
    if (!r.is_ok()) return fail(r.status());
    Status st = recorder->append(*r);
    if (!st.is_ok()) return fail(st);
    const OrderedJson& j = *r;
    auto num = [&](const char* k) {
      return j[k].is_number() ? std::optional<double>(j[k].get<double>()) : std::nullopt;
    };
    const auto best = num("t_best"), eager = num("t_eager"), compile = num("t_compile");
    std::string ratio = best && compile ? fixed(*compile / *best, 2) + "x" : "-";
    std::fprintf(stderr, "[%zu/%zu] %s: %d states%s, %d programs, best %s (eager %s, compile %s), %.1f s\n", i + 1,
                 todo.size(), todo[i]->name.c_str(), j["states"].get<int>(), j["capped"].get<bool>() ? " (capped)" : "",
                 j["programs"].get<int>(), ms(best).c_str(), ms(eager).c_str(), ms(compile).c_str(),
                 j["seconds"].get<double>());
    table.add_row({todo[i]->name, std::to_string(j["states"].get<int>()) + (j["capped"].get<bool>() ? " (capped)" : ""),
                   std::to_string(j["programs"].get<int>()), ms(best), ms(eager), ms(compile), ratio,
                   fixed(j["seconds"].get<double>(), 1)});
    summary.push_back(j);
  }
  std::cout << table.render();
  std::cout << "recorded " << summary.size() << " problems in " << a.record << " (" << (*evaluator)->name() << ")";
  if (left > 0) std::cout << "; " << left << " not reached before --time-limit: run again with --resume";
  if (!too_many.empty()) std::cout << "; " << too_many.size() << " left out with more than --max-states states";
  if (!a.reuse.empty()) std::cout << "; " << reused.size() << " reused unchanged from " << join(a.reuse, ", ");
  std::cout << "\n";
  if (!a.json_out.empty()) {
    OrderedJson doc;
    doc["record"] = a.record;
    doc["evaluator"] = (*evaluator)->name();
    doc["protocol"] = a.protocol;
    doc["max_states"] = a.max_states;
    doc["problems"] = summary;
    doc["not_reached"] = left;
    doc["left_out_over_max_states"] = too_many;
    doc["reused"] = reused;
    doc["action_space"] = agent::action_space_fingerprint();
    Status w = write_file(a.json_out, doc.dump(2) + "\n");
    if (!w.is_ok()) return fail(w);
  }
  return kExitOk;
}

}  // namespace kforge::cli
