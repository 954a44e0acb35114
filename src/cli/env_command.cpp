// kforge env (env_command.h): one episode of the agent's environment replayed from its action ids, the
// observation printed as JSON; the HTTP service keeps an episode as its list of actions and asks this.
// kforge serve: execs the project's python on kforge.service.
#include "cli/env_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "agent/evaluation_log.h"
#include "agent/evaluator_factory.h"
#include "agent/tasks.h"
#include "base/json.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"

namespace kforge::cli {

CLI::App* add_env_subcommand(CLI::App& app, EnvArgs& a) {
  auto* cmd = app.add_subcommand(
      "env",
      "replay an episode of the agent's environment (reset, then one action id per turn) and print the "
      "observation as JSON: legal actions, the last evaluation, the best so far, reward, done");
  cmd->add_option("problem", a.problem, "KernelBench-format problem (.py)")->required();
  cmd->add_option("--actions", a.actions, "comma-separated action ids, one per turn (default: none, the reset)");
  cmd->add_option("--device", a.device, "cpu (cost model, predicted; the default), cuda (measured) or auto")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  add_protocol_option(cmd, a.protocol);
  cmd->add_option("--out", a.out, "where GPU candidates are built (default: the build cache's env/)");
  cmd->add_option("--max-turns", a.max_turns, "the episode's turn limit")->check(CLI::PositiveNumber);
  cmd->add_option("--trials", a.trials, "timed trials per variant on the GPU")->check(CLI::PositiveNumber);
  cmd->add_flag("--evaluate-each", a.evaluate_each,
                "evaluate every turn (default: the turns before the last are edits, evaluated only at the end)");
  cmd->add_flag("--last-edit", a.last_edit, "the last turn is an edit too: only the first schedule is evaluated");
  cmd->add_option("--record", a.record,
                  "an evaluation log (JSON lines, as `kforge explore --record`): programs it holds are answered from "
                  "it, new evaluations are appended, so a replayed episode measures each program once");
  return cmd;
}

namespace {

OrderedJson evaluation_json(const agent::Evaluation& e) {
  OrderedJson j;
  j["result"] = sandbox::result_to_json(e.result);
  j["reward"] = e.reward ? OrderedJson(*e.reward) : OrderedJson(nullptr);
  return j;
}

StatusOr<std::vector<int>> parse_actions(const std::string& list) {
  std::vector<int> ids;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() : comma + 1;
    if (item.empty()) continue;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &end, 10);
    if (errno != 0 || end == item.c_str() || *end != '\0' || v < 0 || v > 1000000)
      return invalid_argument("--actions: '" + item + "' is not an action id (a number from 0, comma-separated)");
    ids.push_back(static_cast<int>(v));
  }
  return ids;
}

// Answers the programs of an evaluation log from it; evaluates the others with `inner` (which records them).
class LoggedEvaluator : public agent::Evaluator {
 public:
  LoggedEvaluator(std::shared_ptr<agent::Evaluator> inner, std::map<std::string, agent::Evaluation> logged)
      : inner_(std::move(inner)), logged_(std::move(logged)) {}
  std::string name() const override { return inner_->name(); }
  bool measured() const override { return inner_->measured(); }
  StatusOr<agent::Evaluation> evaluate(const agent::Task& task, const schedule::Schedule& s) override {
    const std::string key = agent::evaluation_key(task, s);
    if (auto it = logged_.find(key); it != logged_.end()) return it->second;
    KF_ASSIGN_OR_RETURN(agent::Evaluation e, inner_->evaluate(task, s));
    ++fresh_;
    return logged_.emplace(key, std::move(e)).first->second;
  }
  int fresh() const { return fresh_; }

 private:
  std::shared_ptr<agent::Evaluator> inner_;
  std::map<std::string, agent::Evaluation> logged_;
  int fresh_ = 0;
};

}  // namespace

int run_env(const EnvArgs& a) {
  auto ids = parse_actions(a.actions);
  if (!ids.is_ok()) return report_error(ids.status(), "env");
  agent::TaskLoadOptions lo;
  lo.protocol = a.protocol;
  auto loaded = agent::load_tasks({a.problem}, lo);
  if (!loaded.is_ok()) return report_error(loaded.status(), "env");
  if (loaded->tasks.empty()) {
    std::string why = loaded->skipped.empty() ? "no task" : loaded->skipped.front();
    return report_error(invalid_argument("cannot load " + a.problem + ": " + why), "env");
  }
  const agent::Task& task = loaded->tasks.front();
  agent::HarnessEvaluatorOptions gpu{
      .work_dir = a.out.empty() ? sandbox::default_cache_dir() / "env" : std::filesystem::path(a.out),
      .trials = a.trials};
  auto evaluator = agent::make_evaluator(a.device, gpu);
  if (!evaluator.is_ok()) return report_error(evaluator.status(), "env");
  std::shared_ptr<agent::Evaluator> judge = *evaluator;
  std::shared_ptr<LoggedEvaluator> logged;
  if (!a.record.empty()) {
    std::map<std::string, agent::Evaluation> known;
    std::error_code ec;
    if (std::filesystem::file_size(a.record, ec) > 0 && !ec) {
      auto log = agent::read_evaluation_logs({a.record});
      if (!log.is_ok()) return report_error(log.status(), "env");
      known = std::move(log->evaluations);
    }
    auto recorder = agent::RecordingEvaluator::open(*evaluator, a.record);
    if (!recorder.is_ok()) return report_error(recorder.status(), "env");
    logged = std::make_shared<LoggedEvaluator>(*recorder, std::move(known));
    judge = logged;
  }
  agent::Environment env(judge, agent::EnvConfig{.max_turns = a.max_turns});
  auto first = env.reset(task);
  if (!first.is_ok()) return report_error(first.status(), "env");
  OrderedJson info = nullptr;
  double reward = 0;
  for (size_t i = 0; i < ids->size(); ++i) {
    if (env.done())
      return report_error(invalid_argument("--actions: turn " + std::to_string(i + 1) +
                                           " comes after the episode ended (stop, the turn limit, or nothing left)"),
                          "env");
    const int n = static_cast<int>(env.observation().actions.size());
    if ((*ids)[i] >= n)
      return report_error(invalid_argument("--actions: turn " + std::to_string(i + 1) + " asks for action " +
                                           std::to_string((*ids)[i]) + " but only 0.." + std::to_string(n - 1) +
                                           " are legal there (" + std::to_string(n - 1) + " is stop)"),
                          "env");
    const bool last = i + 1 == ids->size();
    const bool evaluate = a.evaluate_each || (last && !a.last_edit);
    auto r = evaluate ? env.step((*ids)[i]) : env.edit((*ids)[i]);
    if (!r.is_ok()) return report_error(r.status(), "env");
    info = OrderedJson::parse(r->info.dump());
    reward = r->reward;
  }
  const agent::Observation& o = env.observation();
  OrderedJson j;
  j["task"] = task.name;
  j["protocol"] = task.protocol;
  j["evaluator"] = (*evaluator)->name();
  j["measured"] = (*evaluator)->measured();
  j["turn"] = o.turn;
  j["done"] = env.done();
  j["reward"] = reward;
  j["episode_reward"] = env.episode_reward();
  j["evaluations"] = env.evaluations();
  j["evaluations_new"] = logged ? logged->fresh() : env.evaluations();  // not answered from --record
  j["evaluated"] = o.evaluated;
  OrderedJson actions = OrderedJson::array();
  for (size_t i = 0; i < o.actions.size(); ++i)
    actions.push_back({{"id", static_cast<int>(i)}, {"action", o.actions[i].describe()}});
  j["actions"] = actions;
  j["last"] = evaluation_json(o.last);
  j["best"] = o.best ? evaluation_json(*o.best) : OrderedJson(nullptr);
  j["info"] = info;
  j["schedule"] = schedule::schedule_to_json(task.graph, o.schedule);
  j["best_schedule"] = schedule::schedule_to_json(task.graph, env.best_schedule());
  std::cout << j.dump() << "\n";
  return kExitOk;
}

CLI::App* add_serve_subcommand(CLI::App& app, ServeArgs& a) {
  auto* cmd = app.add_subcommand(
      "serve",
      "the HTTP/JSON API (FastAPI, OpenAPI at /openapi.json) in front of a Ray pool of build and evaluation "
      "workers; every option goes to `python -m kforge.service` (`kforge serve --help` lists them)");
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->set_help_flag();  // `kforge serve --help` is the service's own (argparse) help
  (void)a;
  return cmd;
}

int run_serve(const ServeArgs& a) {
  const std::string python = sandbox::python_executable();
  auto home = kforge_home();
  if (home.is_ok()) {
    std::string path = (*home / "python").string();
    if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  // The service runs this binary for its jobs (kforge env, evaluate, synth), unless KFORGE_BIN says otherwise.
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::getenv("KFORGE_BIN") == nullptr) ::setenv("KFORGE_BIN", self.c_str(), 1);
  std::vector<std::string> args = {python, "-m", "kforge.service"};
  for (size_t i = 0; i < a.rest.size(); ++i)
    if (i > 0 || a.rest[i] != "--") args.push_back(a.rest[i]);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(python.c_str(), argv.data());
  return report_error(
      external_error("cannot run " + python + ": " + std::strerror(errno) +
                     " (set KFORGE_PYTHON to a python3 with torch and python/requirements/service.txt)"),
      "serve");
}

}  // namespace kforge::cli
