// Recorded evaluations (issue #5's GPU criterion): every candidate an evaluator judged, one JSON line
// each, so that policies can be compared later, on any machine, against what the GPU measured.
//
//   RecordingEvaluator  wraps an evaluator (the GPU harness, or the cost model) and appends each of its
//                       evaluations to a file: {"task", "protocol", "state", "program", "schedule",
//                       "result", "reward"}
//   header line         the first line of a log that explore starts: {"action_space": {...}} (action_space.h),
//                       the version of the skill catalogue and action space the log was explored with
//   ReplayEvaluator     answers from such files: the recorded result of the same task, protocol and
//                       program (schedule::program_hash: the states that build the same kernels share
//                       it), and an error for a program never recorded
//
// `kforge explore` fills a file with every state exhaustive search reaches; `kforge train --eval-tasks
// ... --replay FILE` then compares the policies on it. A policy's evaluations in replay are the GPU
// evaluations it would have spent live; the times are one measurement per state, the same for every
// policy (live, each would see its own timing noise). A program is measured once, whichever state
// builds it: explore records one line per program, and every policy is charged its distinct programs.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/action_space.h"
#include "agent/env.h"
#include "base/json.h"
#include "base/status.h"

namespace kforge::agent {

// The record's key: the task, its protocol and the program its schedule builds.
std::string evaluation_key(const Task& task, const schedule::Schedule& s);

// One line of a log (no newline).
OrderedJson evaluation_record(const Task& task, const schedule::Schedule& s, const Evaluation& e);

class RecordingEvaluator : public Evaluator {
 public:
  // Appends to `path` (created when absent); every line is flushed before evaluate returns, so that a
  // killed run keeps what it measured.
  static StatusOr<std::shared_ptr<RecordingEvaluator>> open(std::shared_ptr<Evaluator> inner,
                                                            const std::filesystem::path& path);
  ~RecordingEvaluator() override;
  std::string name() const override { return inner_->name(); }
  bool measured() const override { return inner_->measured(); }
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override;
  // Appends a line that is not an evaluation (explore's per-task summary: {"task_done": ...}).
  Status append(const OrderedJson& line);
  Evaluator& inner() { return *inner_; }

 private:
  RecordingEvaluator(std::shared_ptr<Evaluator> inner, std::FILE* f, std::filesystem::path path)
      : inner_(std::move(inner)), file_(f), path_(std::move(path)) {}
  std::shared_ptr<Evaluator> inner_;
  std::FILE* file_;
  std::filesystem::path path_;
  std::mutex mutex_;
};

// Answers a program it has evaluated before from memory, so that a program costs one evaluation however
// often a policy (or exhaustive search's replay of its best path) comes back to it, and whichever state
// (skills applied) builds it. One per episode: forwarded() is then the episode's GPU evaluations,
// counted the same way for every policy; states() the distinct states it was asked about.
class CachedEvaluator : public Evaluator {
 public:
  explicit CachedEvaluator(std::shared_ptr<Evaluator> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  bool measured() const override { return inner_->measured(); }
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override;
  int forwarded() const { return static_cast<int>(seen_.size()); }
  int states() const { return static_cast<int>(states_.size()); }

 private:
  std::shared_ptr<Evaluator> inner_;
  std::map<std::string, Evaluation> seen_;  // by evaluation_key
  std::set<std::string> states_;            // state hashes asked about
};

// The header line of a log: this kforge's action space ({"action_space": {...}}).
OrderedJson evaluation_log_header();

// The action space one log file was explored with; nullopt for a log written before logs carried it.
struct EvaluationLogVersion {
  std::string path;
  std::optional<ActionSpaceVersion> action_space;
};

struct EvaluationLog {
  std::map<std::string, Evaluation> evaluations;  // by evaluation_key
  std::vector<EvaluationLogVersion> versions;     // one per file read, in the order given
  std::vector<Json> tasks_done;                   // the {"task_done": ...} lines, in file order
  bool measured = false;                          // every evaluation came from a GPU
  std::vector<std::string> devices;               // the devices named in the results, sorted, distinct
};

// Reads one or more logs; a later line for the same key replaces an earlier one (a re-measurement).
// A malformed line is an error naming the file and line.
StatusOr<EvaluationLog> read_evaluation_logs(const std::vector<std::string>& paths);

// The command that refreshes an explore log for this kforge's catalogue on a GPU machine, re-exploring only
// the problems whose reachable programs changed (`kforge explore --reuse`).
std::string log_refresh_command(const std::string& log_path);

// Ok when every file of `log` was explored with this kforge's action space; otherwise an
// invalid_argument error that names each other file's version and today's (what changed) and the
// command that refreshes it. `use` says what the log was given for ("--replay").
Status check_log_action_space(const EvaluationLog& log, const std::string& use);

// One task's lines of a log, for `kforge explore --reuse`: its evaluation lines (the text as written) by
// program (schedule::program_hash), and its {"task_done"} line when the log finished it.
struct TaskRecords {
  std::map<std::string, std::string> lines_by_program;
  std::string done_line;  // empty when the log did not finish the task
  bool capped = false;    // the task_done line says the search was capped (not exhaustive)
};
// The key of TaskRecords: "task|protocol".
std::string task_records_key(const std::string& task, const std::string& protocol);
// Every task of the logs; a later line for the same program replaces an earlier one.
StatusOr<std::map<std::string, TaskRecords>> read_task_records(const std::vector<std::string>& paths);

class ReplayEvaluator : public Evaluator {
 public:
  ReplayEvaluator(EvaluationLog log, std::string source) : log_(std::move(log)), source_(std::move(source)) {}
  std::string name() const override;  // "replayed GPU measurements (FILE)" or "replayed predictions (FILE)"
  bool measured() const override { return log_.measured; }
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override;
  const EvaluationLog& log() const { return log_; }

 private:
  EvaluationLog log_;
  std::string source_;
};

}  // namespace kforge::agent
