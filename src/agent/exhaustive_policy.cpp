// The exhaustive policy (policy.h): breadth-first search over every schedule reachable from the first
// one the policy sees, then the action path to the fastest correct candidate, one action per choice.
#include <algorithm>
#include <deque>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "agent/policy.h"
#include "schedule/schedule.h"
#include "skills/skill.h"

namespace kforge::agent {
namespace {

class ExhaustivePolicy : public Policy {
 public:
  explicit ExhaustivePolicy(int max_states) : max_states_(std::max(1, max_states)) {}

  std::string name() const override {
    return capped_ ? "exhaustive (capped at " + std::to_string(max_states_) + " states)" : "exhaustive";
  }
  int take_lookahead_evaluations() override { return std::exchange(lookahead_, 0); }
  int states() const { return states_; }

  int choose(const Environment& env, std::mt19937_64& rng) override {
    (void)rng;
    const std::string now = schedule_state_key(env.task().graph, env.observation().schedule);
    // A new episode (or an environment off the planned path): search again from here.
    if (env.observation().turn == 0 || next_ >= expected_.size() || expected_[next_] != now) plan(env, now);
    if (next_ < path_.size()) {
      ++next_;
      return path_[next_ - 1];
    }
    return static_cast<int>(env.observation().actions.size()) - 1;  // stop
  }

 private:
  struct Node {
    Environment env;
    std::vector<int> path;
    std::vector<std::string> hashes;  // the schedule after each action of the path
  };

  void plan(const Environment& env, const std::string& start_hash) {
    path_.clear();
    expected_.clear();
    next_ = 0;
    capped_ = false;
    states_ = 1;
    const ir::Graph& graph = env.task().graph;
    std::unordered_set<std::string> seen{start_hash};
    double best = std::numeric_limits<double>::infinity();
    const auto& last = env.observation().last.result;
    if (last.outcome == sandbox::Outcome::kOk && last.t_candidate) best = *last.t_candidate;
    std::deque<Node> queue;
    queue.push_back({env.fork(), {}, {start_hash}});
    while (!queue.empty()) {
      Node node = std::move(queue.front());
      queue.pop_front();
      if (node.env.done()) continue;
      const Observation& obs = node.env.observation();
      const int skill_actions = static_cast<int>(obs.actions.size()) - 1;
      for (int i = 0; i < skill_actions; ++i) {
        const Action& a = obs.actions[static_cast<size_t>(i)];
        const skills::Skill* skill = skills::find_skill(a.skill);
        if (skill == nullptr) continue;
        auto next = skill->apply(graph, obs.schedule, a.site);
        if (!next.is_ok()) continue;
        std::string h = schedule_state_key(graph, next.value());
        if (!seen.insert(h).second) continue;  // reached already (by another order of the same sites)
        if (states_ >= max_states_) {
          capped_ = true;
          return;
        }
        Environment child = node.env.fork();
        auto stepped = child.step(i);
        if (!stepped.is_ok()) continue;
        ++states_;
        lookahead_ += child.evaluations() - node.env.evaluations();
        Node c{std::move(child), node.path, node.hashes};
        c.path.push_back(i);
        c.hashes.push_back(std::move(h));
        const auto& r = c.env.observation().last.result;
        // A tie goes to the later (deeper) candidate, as the environment's best does.
        if (r.outcome == sandbox::Outcome::kOk && r.t_candidate && *r.t_candidate <= best) {
          best = *r.t_candidate;
          path_ = c.path;
          expected_ = c.hashes;
        }
        queue.push_back(std::move(c));
      }
    }
  }

  int max_states_;
  std::vector<int> path_;
  std::vector<std::string> expected_;  // expected_[k]: the schedule before path_[k]
  size_t next_ = 0;
  bool capped_ = false;
  int states_ = 0;
  int lookahead_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_exhaustive_policy(int max_states) {
  return std::make_unique<ExhaustivePolicy>(max_states);
}

}  // namespace kforge::agent
