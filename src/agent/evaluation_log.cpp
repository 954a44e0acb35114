// Recorded evaluations and their replay (evaluation_log.h).
#include "agent/evaluation_log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "base/files.h"
#include "sandbox/harness.h"
#include "schedule/schedule.h"

namespace kforge::agent {

namespace fs = std::filesystem;

namespace {

// The key of a record: its task, protocol and program (schedule::program_hash): the states that build
// the same program share one evaluation.
std::string record_key(const std::string& task, const std::string& protocol, const std::string& program) {
  return task + "|" + protocol + "|" + program;
}

std::string state_hash(const Task& task, const schedule::Schedule& s) {
  return content_hash(schedule_state_key(task.graph, s)).substr(0, 24);
}

}  // namespace

OrderedJson evaluation_log_header() {
  OrderedJson j;
  j["action_space"] = action_space_to_json(current_action_space());
  return j;
}

std::string evaluation_key(const Task& task, const schedule::Schedule& s) {
  return record_key(task.name, task.protocol, schedule::program_hash(task.graph, s));
}

OrderedJson evaluation_record(const Task& task, const schedule::Schedule& s, const Evaluation& e) {
  OrderedJson j;
  j["task"] = task.name;
  j["protocol"] = task.protocol;
  j["state"] = state_hash(task, s);
  j["program"] = schedule::program_hash(task.graph, s);
  j["schedule"] = schedule::schedule_to_json(task.graph, s);
  j["result"] = sandbox::result_to_json(e.result);
  j["reward"] = e.reward ? OrderedJson(*e.reward) : OrderedJson(nullptr);
  return j;
}

StatusOr<std::shared_ptr<RecordingEvaluator>> RecordingEvaluator::open(std::shared_ptr<Evaluator> inner,
                                                                       const fs::path& path) {
  if (!path.parent_path().empty()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return external_error("cannot append to " + path.string() + ": " + std::strerror(errno) +
                          " (check the directory exists and is writable)");
  }
  return std::shared_ptr<RecordingEvaluator>(new RecordingEvaluator(std::move(inner), f, path));
}

RecordingEvaluator::~RecordingEvaluator() {
  std::fclose(file_);
}

Status RecordingEvaluator::append(const OrderedJson& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    return external_error("writing " + path_.string() + " failed: " + std::strerror(errno));
  }
  return Status::ok();
}

StatusOr<Evaluation> RecordingEvaluator::evaluate(const Task& task, const schedule::Schedule& s) {
  KF_ASSIGN_OR_RETURN(Evaluation e, inner_->evaluate(task, s));
  KF_RETURN_IF_ERROR(append(evaluation_record(task, s, e)));
  return e;
}

StatusOr<Evaluation> CachedEvaluator::evaluate(const Task& task, const schedule::Schedule& s) {
  states_.insert(state_hash(task, s));
  const std::string key = evaluation_key(task, s);
  auto it = seen_.find(key);
  if (it != seen_.end()) return it->second;
  KF_ASSIGN_OR_RETURN(Evaluation e, inner_->evaluate(task, s));
  return seen_.emplace(key, std::move(e)).first->second;
}

namespace {

StatusOr<Evaluation> evaluation_from_record(const Json& j) {
  Evaluation e;
  const Json& r = j.at("result");
  if (!r.is_object()) return invalid_argument("\"result\" is not an object");
  e.result = sandbox::result_from_harness_json(r, j.at("protocol").get<std::string>());
  e.result.predicted = r.value("predicted", false);
  if (j.contains("reward") && j["reward"].is_number()) e.reward = j["reward"].get<int>();
  return e;
}

}  // namespace

StatusOr<EvaluationLog> read_evaluation_logs(const std::vector<std::string>& paths) {
  if (paths.empty()) return invalid_argument("no evaluation log given");
  EvaluationLog log;
  std::set<std::string> devices;
  bool all_measured = true;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) return not_found(path + " does not exist or cannot be read (make it with `kforge explore --record`)");
    std::string line;
    int n = 0;
    EvaluationLogVersion version{path, std::nullopt};
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      const std::string where = path + ":" + std::to_string(n);
      KF_ASSIGN_OR_RETURN(Json j, parse_json(line, where));
      try {
        if (j.contains("action_space")) {
          auto v = action_space_from_json(j["action_space"]);
          if (!v.is_ok()) return invalid_argument(where + ": " + v.status().message());
          // A log resumed by another kforge would carry two headers; the last one names what it lacks least.
          version.action_space = std::move(v.value());
          continue;
        }
        if (j.contains("task_done")) {
          log.tasks_done.push_back(j);
          continue;
        }
        // Keyed by the program its schedule builds (computed, not read: logs before the "program"
        // field have the schedule too).
        const std::string key = record_key(j.at("task").get<std::string>(), j.at("protocol").get<std::string>(),
                                           schedule::program_hash_of_json(j.at("schedule")));
        auto e = evaluation_from_record(j);
        if (!e.is_ok()) return invalid_argument(where + ": " + e.status().message());
        all_measured = all_measured && !e->result.predicted;
        if (!e->result.device.empty()) devices.insert(e->result.device);
        log.evaluations[key] = std::move(e.value());
      } catch (const Json::exception& ex) {
        return invalid_argument(where + ": not an evaluation record (" + ex.what() + ")");
      }
    }
    log.versions.push_back(std::move(version));
  }
  log.measured = all_measured && !log.evaluations.empty();
  log.devices.assign(devices.begin(), devices.end());
  return log;
}

std::string log_refresh_command(const std::string& log_path) {
  return "on a GPU machine, `kforge explore ../shared/kernelbench/level2 ../shared/kernelbench/level1 --device cuda "
         "--no-compile --eager-once --max-states 4096 --reuse " +
         log_path + " --record NEW.jsonl` (EXPLORE_REUSE=" + log_path +
         " EXPLORE_MAX_STATES=4096 bench/gpu_run.sh explore; the same command with --device cpu --dry-run lists the "
         "problems it would measure): it copies the problems whose reachable programs are unchanged and measures "
         "only the others";
}

Status check_log_action_space(const EvaluationLog& log, const std::string& use) {
  std::string problems;
  for (const auto& v : log.versions) {
    if (v.action_space && v.action_space->fingerprint == action_space_fingerprint()) continue;
    problems += "\n  " + v.path + ": " + action_space_difference(v.action_space) +
                "; it may lack schedules today's skills reach. Refresh it " + log_refresh_command(v.path);
  }
  if (problems.empty()) return Status::ok();
  return invalid_argument(use + ": a log explored with another skill catalogue or action space:" + problems);
}

std::string task_records_key(const std::string& task, const std::string& protocol) {
  return task + "|" + protocol;
}

StatusOr<std::map<std::string, TaskRecords>> read_task_records(const std::vector<std::string>& paths) {
  std::map<std::string, TaskRecords> out;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) return not_found(path + " does not exist or cannot be read");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      const std::string where = path + ":" + std::to_string(n);
      KF_ASSIGN_OR_RETURN(Json j, parse_json(line, where));
      try {
        if (j.contains("action_space")) continue;
        if (j.contains("task_done")) {
          auto& r = out[task_records_key(j["task_done"].get<std::string>(), j.value("protocol", ""))];
          r.done_line = line;
          r.capped = j.value("capped", false);
          continue;
        }
        auto& r = out[task_records_key(j.at("task").get<std::string>(), j.at("protocol").get<std::string>())];
        r.lines_by_program[schedule::program_hash_of_json(j.at("schedule"))] = line;
      } catch (const Json::exception& ex) {
        return invalid_argument(where + ": not an evaluation record (" + ex.what() + ")");
      }
    }
  }
  return out;
}

std::string ReplayEvaluator::name() const {
  return std::string(log_.measured ? "replayed GPU measurements" : "replayed predictions") + " (" + source_ + ")";
}

StatusOr<Evaluation> ReplayEvaluator::evaluate(const Task& task, const schedule::Schedule& s) {
  auto it = log_.evaluations.find(evaluation_key(task, s));
  if (it == log_.evaluations.end()) {
    return not_found(
        "task '" + task.name + "' (" + task.protocol + "): a schedule not in " + source_ +
        " (applied: " + std::to_string(s.applied.size()) +
        " skills); record every reachable schedule with `kforge explore --record` first (a log explored with "
        "another skill catalogue lacks them: refresh it " +
        log_refresh_command(source_) + ")");
  }
  return it->second;
}

}  // namespace kforge::agent
