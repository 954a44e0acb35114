// The environment: a task's schedule changed one skill site per turn, evaluated after each change.
#include "agent/env.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agent/features.h"
#include "costmodel/roofline.h"
#include "sandbox/protocol.h"
#include "schedule/planner.h"

namespace kforge::agent {

struct Environment::State {
  Observation obs;
  schedule::Schedule best_schedule;
  bool done = false;
  int evaluations = 0;
};

namespace {

// Every legal site of every enabled skill, in catalogue then site order, then stop.
std::vector<Action> legal_actions(const ir::Graph& g, const schedule::Schedule& s,
                                  const std::set<std::string>& disabled) {
  std::vector<Action> actions;
  for (const auto& skill : skills::all_skills()) {
    const std::string name(skill.name);
    if (disabled.count(name)) continue;
    for (auto& site : skill.sites(g, s)) actions.push_back(Action{name, std::move(site)});
  }
  actions.push_back(Action{});
  return actions;
}

double time_of(const std::optional<Evaluation>& e) {
  if (!e || e->result.outcome != sandbox::Outcome::kOk) return std::numeric_limits<double>::infinity();
  return e->result.t_candidate.value_or(std::numeric_limits<double>::infinity());
}

// Whether `e` is a correct candidate at least as good as `best` (as fast or faster; or the first
// correct one). A tie goes to the later candidate: it carries the skills whose gains the evaluator
// may not see (the cost model does not model cuDNN's engine choice).
bool improves(const Evaluation& e, const std::optional<Evaluation>& best) {
  if (e.result.outcome != sandbox::Outcome::kOk) return false;
  if (!best) return true;
  return time_of(e) <= time_of(best);
}

Status check_skill_names(const std::set<std::string>& disabled) {
  for (const auto& name : disabled) {
    if (skills::find_skill(name) != nullptr) continue;
    std::string names;
    for (const auto& s : skills::all_skills()) names += (names.empty() ? "" : ", ") + std::string(s.name);
    return invalid_argument("unknown skill '" + name + "' (skills: " + names + ")");
  }
  return Status::ok();
}

}  // namespace

std::string Action::describe() const {
  if (is_stop()) return "stop";
  return skill + ": " + site.what;
}

std::string schedule_state_key(const ir::Graph& g, const schedule::Schedule& s) {
  OrderedJson j = schedule::schedule_to_json(g, s);
  std::vector<std::string> applied = s.applied;
  std::sort(applied.begin(), applied.end());
  j["applied"] = applied;
  return j.dump();
}

StatusOr<double> protocol_tolerance(const std::string& protocol) {
  KF_ASSIGN_OR_RETURN(sandbox::Protocol p, sandbox::protocol_named(protocol));
  return p.atol;
}

Environment::Environment(std::shared_ptr<Evaluator> evaluator, EnvConfig config)
    : evaluator_(std::move(evaluator)), config_(std::move(config)), state_(std::make_shared<State>()) {}

StatusOr<Observation> Environment::reset(const Task& task) {
  KF_RETURN_IF_ERROR(check_skill_names(config_.disabled_skills));
  if (config_.max_turns < 1) return invalid_argument("max_turns must be at least 1");
  KF_ASSIGN_OR_RETURN(double tolerance, protocol_tolerance(task.protocol));
  task_ = std::make_shared<const Task>(task);
  state_ = std::make_shared<State>();
  schedule::Schedule first =
      schedule::plan_one_kernel_per_op(task_->graph, {.precision = "fp32", .tolerance = tolerance});
  KF_ASSIGN_OR_RETURN(Evaluation e, evaluator_->evaluate(*task_, first));
  state_->evaluations = 1;
  Observation& obs = state_->obs;
  obs.schedule = std::move(first);
  obs.last = e;
  if (e.result.outcome == sandbox::Outcome::kOk) obs.best = e;
  state_->best_schedule = obs.schedule;
  refresh_actions();
  return obs;
}

void Environment::refresh_actions() {
  Observation& obs = state_->obs;
  const ir::Graph& g = task_->graph;
  obs.actions = legal_actions(g, obs.schedule, config_.disabled_skills);
  obs.state_features = state_features(*task_, obs, config_.max_turns);
  const double seconds = costmodel::program_cost(g, obs.schedule).seconds;
  obs.action_features.clear();
  for (const auto& a : obs.actions) obs.action_features.push_back(action_features(*task_, obs.schedule, seconds, a));
}

StatusOr<StepResult> Environment::step(int action) {
  return advance(action, /*evaluate=*/true);
}

StatusOr<StepResult> Environment::edit(int action) {
  return advance(action, /*evaluate=*/false);
}

Status Environment::judge(schedule::Schedule next) {
  Observation& obs = state_->obs;
  KF_ASSIGN_OR_RETURN(Evaluation e, evaluator_->evaluate(*task_, next));
  ++state_->evaluations;
  if (improves(e, obs.best)) {
    obs.best = e;
    state_->best_schedule = next;
  }
  obs.schedule = std::move(next);
  obs.last = std::move(e);
  obs.evaluated = true;
  return Status::ok();
}

StatusOr<StepResult> Environment::advance(int action, bool evaluate) {
  if (!task_) return invalid_argument("step before reset: reset the environment with a task first");
  if (state_->done) return invalid_argument("the episode is over: reset the environment to start another");
  Observation& obs = state_->obs;
  const int n = static_cast<int>(obs.actions.size());
  if (action < 0 || action >= n) {
    return invalid_argument("action " + std::to_string(action) + " is not one of the " + std::to_string(n) +
                            " legal actions (0.." + std::to_string(n - 1) + ")");
  }
  const Action chosen = obs.actions[static_cast<size_t>(action)];
  StepResult r;
  r.info["action"] = chosen.describe();
  r.info["turn"] = obs.turn + 1;
  if (chosen.is_stop()) {
    state_->done = true;
  } else {
    const skills::Skill* skill = skills::find_skill(chosen.skill);
    KF_ASSIGN_OR_RETURN(schedule::Schedule next, skill->apply(task_->graph, obs.schedule, chosen.site));
    if (evaluate) {
      KF_RETURN_IF_ERROR(judge(std::move(next)));
    } else {
      obs.schedule = std::move(next);
      obs.evaluated = false;
    }
  }
  ++obs.turn;
  if (obs.turn >= config_.max_turns) state_->done = true;
  // An episode never ends on a candidate nobody judged: edits are evaluated when it ends.
  if (state_->done && !obs.evaluated) KF_RETURN_IF_ERROR(judge(obs.schedule));
  refresh_actions();
  if (obs.actions.size() == 1 && !state_->done) {
    state_->done = true;
    if (!obs.evaluated) {
      KF_RETURN_IF_ERROR(judge(obs.schedule));
      refresh_actions();
    }
  }
  r.info["evaluated"] = obs.evaluated;
  const sandbox::EvalResult& last = obs.last.result;
  r.info["outcome"] = sandbox::outcome_name(last.outcome);
  r.info["t_candidate"] = last.t_candidate ? Json(*last.t_candidate) : Json(nullptr);
  r.info["predicted"] = last.predicted;
  if (!last.message.empty()) r.info["message"] = last.message;
  r.done = state_->done;
  r.reward = r.done ? episode_reward() : 0.0;
  r.observation = obs;
  return r;
}

Environment Environment::fork() const {
  Environment copy(evaluator_, config_);
  copy.task_ = task_;
  copy.state_ = std::make_shared<State>(*state_);
  return copy;
}

const Observation& Environment::observation() const {
  return state_->obs;
}
bool Environment::done() const {
  return state_->done;
}
int Environment::evaluations() const {
  return state_->evaluations;
}

double Environment::episode_reward() const {
  const auto& best = state_->obs.best;
  if (!best) return -1;
  return best->reward.value_or(best->result.outcome == sandbox::Outcome::kOk ? 1 : -1);
}

const Task& Environment::task() const {
  KF_CHECK(task_ != nullptr) << "Environment::task() before reset";
  return *task_;
}

const schedule::Schedule& Environment::best_schedule() const {
  return state_->best_schedule;
}

}  // namespace kforge::agent
