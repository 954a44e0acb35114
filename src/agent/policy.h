// Policies behind one interface (issue #5): random, heuristic (the paper's SKILL.md priorities),
// search (beam over Environment::fork guided by the evaluator), and learned (src/rl). An episode
// runner that every policy, command and comparison uses.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agent/env.h"

namespace kforge::agent {

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;  // "random", "heuristic", "search", "exhaustive", "learned"
  // Chooses an index into env.observation().actions. May fork `env` (search) but must not step it.
  virtual int choose(const Environment& env, std::mt19937_64& rng) = 0;
  // Evaluator calls the policy made on forks (search look-ahead) since the last call; run_episode
  // adds them to Episode::evaluations. Policies that do not look ahead spend none.
  virtual int take_lookahead_evaluations() { return 0; }
  // Whether the action just chosen is evaluated (Environment::step) or only applied
  // (Environment::edit: the episode's end evaluates the schedule it ends on).
  virtual bool evaluates(const Environment& env, int action) {
    (void)env;
    (void)action;
    return true;
  }
};

std::unique_ptr<Policy> make_random_policy();
std::unique_ptr<Policy> make_heuristic_policy();
std::unique_ptr<Policy> make_search_policy(int beam_width = 4, int depth = 3);
// At its first choice in an episode, breadth-first search over every schedule reachable from the
// current one (fork + step; schedules deduplicated before they are evaluated, by their JSON with the applied
// skills sorted) up to `max_states` evaluated states; then it plays the action path to the fastest correct
// candidate, one action per choice, and stops. Its evaluations count as look-ahead. Name "exhaustive";
// "exhaustive (capped at N states)" after a search the cap cut short (then it is not exhaustive).
std::unique_ptr<Policy> make_exhaustive_policy(int max_states = 4096);

// Plans with `inner` on `planner` (an evaluator that costs no GPU time: the cost model): at its first
// choice in an episode it plays a whole episode of `inner` there, then applies the actions that led to
// the fastest candidate the planner saw as edits, and stops, so that the real evaluator judges only
// the first schedule and the plan's end. `planner` evaluations are not counted (they are predictions,
// free). Name: inner's name + " (planned)". With `refine`, the plan's last action is a measured step
// and `inner` then goes on from the plan's end, every turn measured, until it stops (name: " (planned,
// refined)"): the plan saves the evaluations on the way, the measurements correct the planner.
std::unique_ptr<Policy> make_planned_policy(std::unique_ptr<Policy> inner, std::shared_ptr<Evaluator> planner,
                                            bool refine = false);

// One step of an episode, as training needs it.
struct Transition {
  std::vector<float> state_features;
  std::vector<std::vector<float>> action_features;
  int action = 0;
  double reward = 0;
  bool done = false;
  std::string action_name;  // Action::describe()
  std::string outcome;      // of the evaluation after the step
};

struct Episode {
  std::string task;
  std::string policy;  // the policy's name() at the end of the episode
  std::vector<Transition> transitions;
  double reward = -1;  // milestone reward of the best correct candidate
  bool faster_than_compile = false;
  int turns = 0;
  int evaluations = 0;      // evaluator calls, search look-ahead included
  bool predicted = true;    // whether the evaluations were cost-model predictions
  schedule::Schedule best;  // the best correct schedule found
};

// Runs `policy` on `task` from reset until done. `seed` seeds the policy's random source.
StatusOr<Episode> run_episode(Environment& env, Policy& policy, const Task& task, uint64_t seed);

}  // namespace kforge::agent
