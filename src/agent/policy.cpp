// The random, heuristic and search policies, and the episode runner.
#include "agent/policy.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "agent/features.h"

namespace kforge::agent {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The time of the best correct candidate so far (infinity when there is none).
double best_time(const Environment& env) {
  const auto& best = env.observation().best;
  if (!best || best->result.outcome != sandbox::Outcome::kOk) return kInfinity;
  return best->result.t_candidate.value_or(kInfinity);
}

int stop_index(const Environment& env) {
  return static_cast<int>(env.observation().actions.size()) - 1;
}

class RandomPolicy : public Policy {
 public:
  std::string name() const override { return "random"; }
  int choose(const Environment& env, std::mt19937_64& rng) override {
    std::uniform_int_distribution<int> pick(0, stop_index(env));
    return pick(rng);
  }
};

// The paper's SKILL.md priorities: algorithmic changes and fusion first, then hardware utilisation
// (precision, library engines, CUDA graphs, layouts), then tuning (tiles, vector widths, block sizes).
// A skill not named here is tuning.
int skill_tier(const std::string& skill) {
  // Algorithmic first (rewrites that remove work, then fusion), then hardware utilisation, then tuning.
  if (skill == "constant_output") return 0;
  if (skill == "fuse_elementwise") return 1;
  if (skill == "einsum_gemm") return 1;  // an algorithmic choice: the library GEMM for a contraction
  // Fusions around scans (a prologue, flips and a shifted concatenation folded into the scan's indexing).
  if (skill == "scan_prologue" || skill == "scan_reverse" || skill == "scan_exclusive") return 1;
  if (skill == "tf32_contractions") return 2;
  if (skill == "conv_engine_search") return 3;  // tuning: engines timed on the device
  return 2;
}

// The heuristic's choice: the first site of the highest-priority tier that the cost model does not
// predict to slow the program down; stop when every site would. A site predicted to change nothing is
// taken too: the roofline cannot see some gains (cuDNN's engine choice), and the default planner
// takes every site, so the heuristic's schedule is at least the planner's.
int heuristic_choice(const Environment& env) {
  const Observation& obs = env.observation();
  int chosen = stop_index(env);
  int chosen_tier = std::numeric_limits<int>::max();
  for (int i = 0; i < stop_index(env); ++i) {
    const auto& f = obs.action_features[static_cast<size_t>(i)];
    if (f[kActionApplyFailed] > 0 || f[kActionCostChange] > 1e-9) continue;
    const int tier = skill_tier(obs.actions[static_cast<size_t>(i)].skill);
    if (tier < chosen_tier) {
      chosen = i;
      chosen_tier = tier;
    }
  }
  return chosen;
}

class HeuristicPolicy : public Policy {
 public:
  std::string name() const override { return "heuristic"; }
  int choose(const Environment& env, std::mt19937_64& rng) override { return heuristic_choice(env); }
};

// Beam search over forks: expands every skill action of the beam's environments for `depth` turns,
// keeps the `beam_width` with the fastest best candidate, and returns the first action of the path
// that reached the fastest correct candidate; when no path beats the current best, the heuristic's
// choice (which takes sites the evaluator sees no change for, and stops before predicted losses).
class SearchPolicy : public Policy {
 public:
  SearchPolicy(int beam_width, int depth) : beam_width_(std::max(1, beam_width)), depth_(std::max(1, depth)) {}
  std::string name() const override { return "search"; }
  int take_lookahead_evaluations() override { return std::exchange(lookahead_, 0); }

  int choose(const Environment& env, std::mt19937_64& rng) override {
    struct Candidate {
      Environment env;
      int first_action;
      double time;
    };
    double best = best_time(env);
    int best_first = -1;
    std::vector<Candidate> frontier;
    frontier.push_back({env.fork(), -1, best});
    for (int d = 0; d < depth_ && !frontier.empty(); ++d) {
      std::vector<Candidate> children;
      for (const auto& node : frontier) {
        if (node.env.done()) continue;
        const int skill_actions = static_cast<int>(node.env.observation().actions.size()) - 1;
        for (int i = 0; i < skill_actions; ++i) {
          Environment child = node.env.fork();
          auto stepped = child.step(i);
          if (!stepped.is_ok()) continue;
          lookahead_ += child.evaluations() - node.env.evaluations();
          const double t = best_time(child);
          const int first = d == 0 ? i : node.first_action;
          if (t < best * (1 - 1e-9)) {
            best = t;
            best_first = first;
          }
          children.push_back({std::move(child), first, t});
        }
      }
      std::stable_sort(children.begin(), children.end(),
                       [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
      if (static_cast<int>(children.size()) > beam_width_)
        children.erase(children.begin() + beam_width_, children.end());
      frontier = std::move(children);
    }
    return best_first >= 0 ? best_first : heuristic_choice(env);
  }

 private:
  int beam_width_;
  int depth_;
  int lookahead_ = 0;
};

Transition transition_before(const Observation& obs, int action) {
  Transition t;
  t.state_features = obs.state_features;
  t.action_features = obs.action_features;
  t.action = action;
  t.action_name = obs.actions[static_cast<size_t>(action)].describe();
  return t;
}

class PlannedPolicy : public Policy {
 public:
  PlannedPolicy(std::unique_ptr<Policy> inner, std::shared_ptr<Evaluator> planner, bool refine)
      : inner_(std::move(inner)), planner_(std::move(planner)), refine_(refine) {}

  std::string name() const override { return inner_->name() + (refine_ ? " (planned, refined)" : " (planned)"); }
  bool evaluates(const Environment& env, int action) override {
    (void)env;
    (void)action;
    // Refining, the plan's last action is a measured step, and so is every turn after it.
    return refine_ && (!from_path_ || next_ == path_.size());
  }
  int take_lookahead_evaluations() override { return inner_->take_lookahead_evaluations(); }

  int choose(const Environment& env, std::mt19937_64& rng) override {
    if (env.observation().turn == 0) plan(env, rng);
    const int stop = static_cast<int>(env.observation().actions.size()) - 1;
    from_path_ = next_ < path_.size() && path_[next_] < stop;
    if (from_path_) return path_[next_++];
    next_ = path_.size();
    return refine_ ? inner_->choose(env, rng) : stop;
  }

 private:
  // The inner policy's episode on the planner, cut after the step that reached its best candidate
  // (found again by replaying the actions as edits from a fresh start on the planner: nothing here
  // touches the real evaluator).
  void plan(const Environment& env, std::mt19937_64& rng) {
    path_.clear();
    next_ = 0;
    Environment planning(planner_, env.config());
    auto ep = run_episode(planning, *inner_, env.task(), rng());
    if (!ep.is_ok()) return;  // nothing planned: stop at the first schedule
    const ir::Graph& graph = env.task().graph;
    const std::string best = schedule_state_key(graph, ep->best);
    Environment replay(planner_, env.config());
    if (!replay.reset(env.task()).is_ok()) return;
    std::vector<int> actions;
    size_t cut = 0;
    for (const Transition& t : ep->transitions) {
      if (replay.done() || t.action >= static_cast<int>(replay.observation().actions.size()) - 1) break;
      if (!replay.edit(t.action).is_ok()) break;
      actions.push_back(t.action);
      if (schedule_state_key(graph, replay.observation().schedule) == best) cut = actions.size();
    }
    path_.assign(actions.begin(), actions.begin() + static_cast<std::ptrdiff_t>(cut));
  }

  std::unique_ptr<Policy> inner_;
  std::shared_ptr<Evaluator> planner_;
  bool refine_;
  std::vector<int> path_;
  size_t next_ = 0;
  bool from_path_ = false;  // the last choice was the plan's
};

}  // namespace

std::unique_ptr<Policy> make_planned_policy(std::unique_ptr<Policy> inner, std::shared_ptr<Evaluator> planner,
                                            bool refine) {
  return std::make_unique<PlannedPolicy>(std::move(inner), std::move(planner), refine);
}

std::unique_ptr<Policy> make_random_policy() {
  return std::make_unique<RandomPolicy>();
}
std::unique_ptr<Policy> make_heuristic_policy() {
  return std::make_unique<HeuristicPolicy>();
}
std::unique_ptr<Policy> make_search_policy(int beam_width, int depth) {
  return std::make_unique<SearchPolicy>(beam_width, depth);
}

StatusOr<Episode> run_episode(Environment& env, Policy& policy, const Task& task, uint64_t seed) {
  std::mt19937_64 rng(seed);
  KF_RETURN_IF_ERROR(env.reset(task).status());
  policy.take_lookahead_evaluations();  // what an earlier episode left uncounted is not this one's
  Episode ep;
  ep.task = task.name;
  int lookahead = 0;
  while (!env.done()) {
    const Observation& obs = env.observation();
    const int action = policy.choose(env, rng);
    lookahead += policy.take_lookahead_evaluations();
    if (action < 0 || action >= static_cast<int>(obs.actions.size())) {
      return internal_error("policy " + policy.name() + " chose action " + std::to_string(action) + " of " +
                            std::to_string(obs.actions.size()));
    }
    Transition t = transition_before(obs, action);
    KF_ASSIGN_OR_RETURN(StepResult r, policy.evaluates(env, action) ? env.step(action) : env.edit(action));
    t.reward = r.reward;
    t.done = r.done;
    t.outcome = sandbox::outcome_name(r.observation.last.result.outcome);
    ep.transitions.push_back(std::move(t));
  }
  const Observation& obs = env.observation();
  ep.policy = policy.name();  // after the episode: exhaustive says whether its cap cut the search
  ep.reward = env.episode_reward();
  ep.turns = static_cast<int>(ep.transitions.size());
  ep.evaluations = env.evaluations() + lookahead;
  ep.predicted = obs.last.result.predicted;
  ep.best = env.best_schedule();
  if (obs.best && obs.best->result.t_candidate && obs.best->result.t_compile)
    ep.faster_than_compile = *obs.best->result.t_candidate < *obs.best->result.t_compile;
  return ep;
}

}  // namespace kforge::agent
