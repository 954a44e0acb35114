// The updates of the paper's training stages, on plain data: PPO with asymmetric clipping (one sample
// is a whole plan in the single-turn warm-up, one decision in multi-turn PPO), the cross-entropy of
// rejection fine-tuning, and the critic's regression (value pretraining and PPO's value loss).
#pragma once

#include <random>
#include <vector>

#include "rl/networks.h"
#include "rl/trajectory.h"

namespace kforge::rl {

// One PPO sample: decisions whose log-probabilities are summed into one ratio, with one advantage.
struct PolicySample {
  std::vector<const Decision*> decisions;
  double old_log_prob = 0;  // sum over `decisions` under the policy that acted
  double advantage = 0;
  double weight = 1;  // the paper's Eq. 5 averages each trajectory's decisions: 1 / T
};

// One regression sample of the critic.
struct ValueSample {
  const std::vector<float>* state = nullptr;
  double target = 0;
};

struct PpoConfig {
  double clip_low = 0.2;    // ratio floor 1 - clip_low for negative advantages
  double clip_high = 0.28;  // ratio ceiling 1 + clip_high for positive advantages (DAPO clip-higher)
  double entropy_coef = 0.01;
  int epochs = 4;
  int minibatch = 64;
  double max_grad_norm = 1.0;
  bool normalize_advantages = true;
};

struct PpoStats {
  double policy_loss = 0;
  double value_loss = 0;
  double entropy = 0;        // mean entropy of the decisions' action distributions (nats)
  double approx_kl = 0;      // mean of (r - 1) - log r over the samples, after the update
  double clip_fraction = 0;  // share of samples whose ratio left the clip range, last epoch
};

// Updates the actor on `policy` (and the critic on `value`, if not empty) for `epochs` passes over
// shuffled minibatches.
PpoStats ppo_update(ActorCritic& net, std::vector<PolicySample> policy, const std::vector<ValueSample>& value,
                    const PpoConfig& config, std::mt19937_64& rng);

struct SupervisedConfig {
  int epochs = 4;
  int minibatch = 64;
  double max_grad_norm = 1.0;
};

// Rejection fine-tuning: minimizes -log pi(chosen | state) over the kept decisions; returns the mean
// loss of the last epoch.
double cross_entropy_update(ActorCritic& net, const std::vector<const Decision*>& decisions,
                            const SupervisedConfig& config, std::mt19937_64& rng);

// Critic regression: minimizes 1/2 (V(s) - target)^2; returns the mean loss of the last epoch.
double value_update(ActorCritic& net, const std::vector<ValueSample>& samples, const SupervisedConfig& config,
                    std::mt19937_64& rng);

// Mean entropy of the policy over these decision points.
double mean_entropy(const ActorCritic& net, const std::vector<const Decision*>& decisions);

}  // namespace kforge::rl
