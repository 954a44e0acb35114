// The learned policy (learned_policy.h).
#include "rl/learned_policy.h"

#include <cmath>

#include "agent/features.h"
#include "base/files.h"

namespace kforge::rl {
namespace {

class LearnedPolicy : public agent::Policy {
 public:
  LearnedPolicy(std::shared_ptr<const ActorCritic> net, ActionChoice choice, std::vector<std::string>* log)
      : net_(std::move(net)), choice_(choice), log_(log) {}

  std::string name() const override { return "learned"; }

  int choose(const agent::Environment& env, std::mt19937_64& rng) override {
    const agent::Observation& obs = env.observation();
    Status fits = check_dims(net_->dims(), static_cast<int>(obs.state_features.size()),
                             obs.action_features.empty() ? 0 : static_cast<int>(obs.action_features[0].size()));
    KF_CHECK(fits.is_ok()) << fits.message();
    if (log_) log_->push_back(schedule_fingerprint(env.task().graph, obs.schedule));
    return pick_action(net_->log_probs(obs.state_features, obs.action_features), choice_, rng);
  }

 private:
  std::shared_ptr<const ActorCritic> net_;
  ActionChoice choice_;
  std::vector<std::string>* log_;
};

}  // namespace

int pick_action(const std::vector<double>& log_probs, ActionChoice choice, std::mt19937_64& rng) {
  KF_CHECK(!log_probs.empty()) << "no actions to pick from";
  int best = 0;
  for (size_t i = 1; i < log_probs.size(); ++i) {
    if (log_probs[i] > log_probs[static_cast<size_t>(best)]) best = static_cast<int>(i);
  }
  if (choice == ActionChoice::kGreedy) return best;
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double cumulative = 0;
  for (size_t i = 0; i < log_probs.size(); ++i) {
    cumulative += std::exp(log_probs[i]);
    if (u < cumulative) return static_cast<int>(i);
  }
  return static_cast<int>(log_probs.size()) - 1;  // rounding left u past the total
}

std::string schedule_fingerprint(const ir::Graph& g, const schedule::Schedule& s) {
  return content_hash(schedule::schedule_to_json(g, s).dump());
}

std::unique_ptr<agent::Policy> make_learned_policy(std::shared_ptr<const ActorCritic> net, ActionChoice choice,
                                                   std::vector<std::string>* schedule_log) {
  return std::make_unique<LearnedPolicy>(std::move(net), choice, schedule_log);
}

StatusOr<std::shared_ptr<const ActorCritic>> load_policy_network(const std::string& checkpoint_path,
                                                                 std::string* action_space_warning) {
  KF_ASSIGN_OR_RETURN(ActorCritic net, ActorCritic::load(checkpoint_path));
  Status dims = check_dims(net.dims(), agent::kStateDim, agent::kActionDim);
  if (!dims.is_ok()) {
    return invalid_argument(checkpoint_path + ": " + dims.message() + "; it was " +
                            agent::action_space_difference(net.action_space) +
                            ". Make it again: " + checkpoint_refresh_command(checkpoint_path));
  }
  Status same = check_action_space(net, checkpoint_path);
  if (!same.is_ok()) {
    if (action_space_warning == nullptr) return same;
    *action_space_warning = same.message();
    // Acting with it: each skill's weights follow its name, where the checkpoint says which slot was which.
    auto unseen = remap_skill_slots(net);
    if (unseen.is_ok()) {
      std::string names;
      for (const auto& n : *unseen) names += (names.empty() ? "" : ", ") + n;
      *action_space_warning += " (its skill slots are remapped by name" +
                               (names.empty() ? std::string() : "; no learned preference for " + names) + ")";
    }
  }
  return std::make_shared<const ActorCritic>(std::move(net));
}

StatusOr<std::unique_ptr<agent::Policy>> make_learned_policy(const std::string& checkpoint_path,
                                                             std::string* action_space_warning) {
  KF_ASSIGN_OR_RETURN(auto net, load_policy_network(checkpoint_path, action_space_warning));
  return make_learned_policy(std::move(net), ActionChoice::kGreedy);
}

}  // namespace kforge::rl
