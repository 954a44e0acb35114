// The agent's environment (issue #5): one task, a schedule that the agent changes one skill site at a
// time, and an evaluator that says how good each candidate is. Contract shared by the agent layer
// (this directory: environment, features, the random / heuristic / search policies) and the rl layer
// (src/rl: the learned actor-critic and the paper's training stages).
//
//   reset(task)  -> observation (turn 0: the first schedule, evaluated)
//   step(action) -> observation, reward, done, info
//   edit(action) -> the same without evaluating the new schedule (evaluated when the episode ends)
//   fork()       -> an independent copy (same task, schedule, history, counters) for search
//
// Actions are the legal sites of every enabled skill on the current schedule, in the catalogue's order
// and each skill's site order, then `stop` (always last, always legal). Anything else is masked: it is
// simply not in the list. A turn applies the action, evaluates the new schedule (GPU harness when the
// evaluator has one, cost model otherwise, and the result says which), and ends the episode on `stop`,
// at max_turns, or when no skill applies any more. Rewards follow the paper: 0 on every turn but the
// last, which carries the episode's milestone reward (-1 / 1 / 2 / 3) of the best correct candidate
// seen, so that returns with gamma = 1 equal the episode reward.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "ir/graph.h"
#include "sandbox/result.h"
#include "schedule/schedule.h"
#include "skills/skill.h"

namespace kforge::agent {

// One problem to optimize: its graph and the protocol it is judged under.
struct Task {
  std::string name;    // "000001_AdaptiveMaxPool3d_Matmul" or "level1/19_ReLU"
  std::string source;  // the problem file it was imported from (empty for built-in tasks)
  ir::Graph graph;
  std::string protocol = "cuda-agent";  // sets the tolerance the schedule must keep
};

// One action: a site of a skill, or stop (skill empty).
struct Action {
  std::string skill;  // empty: stop
  skills::Site site;
  bool is_stop() const { return skill.empty(); }
  std::string describe() const;  // "stop" or "fuse_elementwise: fuse k3_relu into k4_add"
};

// One evaluated candidate. `reward` is the milestone reward of `result`; for a predicted result it is
// the same formula on predicted times with correctness taken from the skills' legality checks, and
// `result.predicted` says so.
struct Evaluation {
  sandbox::EvalResult result;
  std::optional<int> reward;
};

// Says how good a schedule is. Implementations: CostModelEvaluator (roofline, any machine; eager
// predicted as the first schedule, torch.compile as the first schedule with elementwise chains fused,
// both fp32) and HarnessEvaluator (GPU: build + verify + profile). make_evaluator
// (evaluator_factory.h) picks one for a device.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string name() const = 0;            // "cost model (predicted)", "GPU harness (measured)"
  virtual bool measured() const { return false; }  // true: times and correctness come from a GPU
  virtual StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) = 0;
};

// What makes two schedules of a graph the same state: the schedule JSON with the applied skills sorted,
// so that the same sites applied in another order are one state (exhaustive search's deduplication and
// the key of recorded evaluations, agent/evaluation_log.h).
std::string schedule_state_key(const ir::Graph& g, const schedule::Schedule& s);

// The verification tolerance (atol = rtol) a protocol sets: cuda-agent 1e-2, kernelbench 1e-4.
StatusOr<double> protocol_tolerance(const std::string& protocol);

struct EnvConfig {
  int max_turns = 150;                    // the paper's 150 in training, 200 at evaluation
  std::set<std::string> disabled_skills;  // left out of the action space
};

struct Observation {
  schedule::Schedule schedule;     // the current candidate
  std::vector<Action> actions;     // the legal actions now; the last one is stop
  Evaluation last;                 // the evaluation of the current schedule (compiler/profiler output)
  bool evaluated = true;           // false after an edit: `last` is then an earlier schedule's
  std::optional<Evaluation> best;  // the best correct candidate so far (by time; a tie goes to the later)
  int turn = 0;
  // Features for learned policies (agent/features.h defines them): one vector for the state, one per
  // action (same length for every action), all finite.
  std::vector<float> state_features;
  std::vector<std::vector<float>> action_features;
};

struct StepResult {
  Observation observation;
  double reward = 0;  // 0 until done; then the episode's milestone reward
  bool done = false;
  Json info;  // {"action": ..., "outcome": ..., "t_candidate": ..., "predicted": ..., "turn": ...}
};

class Environment {
 public:
  Environment(std::shared_ptr<Evaluator> evaluator, EnvConfig config = {});

  StatusOr<Observation> reset(const Task& task);
  // `action` indexes the last observation's actions; out of range is an error, not a crash.
  StatusOr<StepResult> step(int action);
  // The same turn without the evaluation: the action changes the schedule, nothing is built or
  // measured (as an engineer edits code without compiling it). When the episode ends (stop, the turn
  // limit, nothing left to apply) on a schedule not evaluated yet, it is evaluated then, so that an
  // episode of edits costs one evaluation after the first schedule's.
  StatusOr<StepResult> edit(int action);
  Environment fork() const;

  const Observation& observation() const;
  bool done() const;
  int evaluations() const;        // evaluator calls since reset (the budget policies are compared at)
  double episode_reward() const;  // milestone reward of the best correct candidate so far (-1 if none)
  const Task& task() const;       // the task of the last reset
  const EnvConfig& config() const { return config_; }
  // The best correct schedule so far (the first schedule when none was correct).
  const schedule::Schedule& best_schedule() const;

 private:
  struct State;
  void refresh_actions();  // the legal actions and the features of the current observation
  StatusOr<StepResult> advance(int action, bool evaluate);
  Status judge(schedule::Schedule next);  // evaluates `next`, which becomes the current schedule

  std::shared_ptr<Evaluator> evaluator_;
  EnvConfig config_;
  std::shared_ptr<const Task> task_;
  std::shared_ptr<State> state_;  // copied on fork
};

}  // namespace kforge::agent
