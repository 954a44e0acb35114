// The learned policy behind agent::Policy: the actor of an ActorCritic picks among the observation's
// legal actions, greedily (evaluation) or by sampling (training rollouts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/policy.h"
#include "base/status.h"
#include "rl/networks.h"

namespace kforge::rl {

enum class ActionChoice { kGreedy, kSample };

// `schedule_log`, when given, receives a fingerprint of the schedule of each decision (the redundant
// loop filter of rejection fine-tuning needs it). The networks must fit agent/features.h's dims.
std::unique_ptr<agent::Policy> make_learned_policy(std::shared_ptr<const ActorCritic> net, ActionChoice choice,
                                                   std::vector<std::string>* schedule_log = nullptr);

// The networks of a checkpoint written by `kforge train`; a missing or damaged file, or networks of
// other feature dims than this kforge's, is an error that says so (with the action spaces and the
// command that makes it again). A checkpoint of the same dims made with another action space (or one
// that does not say) is an error too, unless `action_space_warning` is given: it then receives the
// message and the networks load.
StatusOr<std::shared_ptr<const ActorCritic>> load_policy_network(const std::string& checkpoint_path,
                                                                 std::string* action_space_warning = nullptr);

// Greedy policy from such a checkpoint.
StatusOr<std::unique_ptr<agent::Policy>> make_learned_policy(const std::string& checkpoint_path,
                                                             std::string* action_space_warning = nullptr);

// A fingerprint of the schedule (a hash of its JSON).
std::string schedule_fingerprint(const ir::Graph& g, const schedule::Schedule& s);

// Picks an index from log-probabilities: the largest (first on ties) or a sample.
int pick_action(const std::vector<double>& log_probs, ActionChoice choice, std::mt19937_64& rng);

}  // namespace kforge::rl
