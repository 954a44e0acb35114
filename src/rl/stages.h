// The paper's training stages (sections 4-5 of the digest), each resumable from its checkpoint in the
// run directory and logging one metrics line per iteration:
//   warmup  - single-turn PPO: a whole plan sampled open-loop (no measurement in the features), one
//             reward for the plan's final schedule, PPO on the plan's summed log-probability;
//   collect - multi-turn episodes with the warmed policy (agent::run_episode), stored as JSONL;
//   rft     - rejection fine-tuning of the actor: cross-entropy on the kept decisions (rft_filter);
//   value   - value pretraining of the critic on the collected episodes: GAE(1, 0.95) targets, MSE;
//   ppo     - multi-turn PPO with asymmetric clipping (0.2 / 0.28), GAE(1, 0.95), entropy bonus.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/env.h"
#include "base/json.h"
#include "base/status.h"
#include "rl/ppo.h"

namespace kforge::rl {

// The sizes of one training recipe.
struct Preset {
  std::string name;
  int synth_tasks = 0;    // tasks synthesized when no --tasks are given
  int synth_max_ops = 8;  // operators per synthesized task, at most (more ops, more skill sites)
  double held_out_fraction = 0.25;
  int hidden = 64;
  int train_turns = 150;   // max turns of a training episode (the paper's 150)
  int eval_budget = 200;   // evaluations per held-out task at comparison (the paper's 200 turns)
  int random_repeats = 3;  // random policy episodes per held-out task (its mean is reported)

  int warmup_iterations = 0;
  int warmup_plans = 0;       // plans per iteration
  int warmup_plan_turns = 0;  // the longest plan
  int collect_episodes = 0;   // in total, cycling over the training tasks
  int rft_epochs = 0;
  int value_rounds = 0;  // target recomputations; each trains value_epochs
  int value_epochs = 0;
  int ppo_iterations = 0;
  int ppo_episodes = 0;  // per iteration

  double actor_lr = 3e-4;
  double critic_lr = 1e-3;
  PpoConfig ppo;
  SupervisedConfig supervised;
};

Preset ci_preset();
Preset full_preset();
StatusOr<Preset> preset_named(const std::string& name);

// The stages, in order; "all" runs them all.
const std::vector<std::string>& stage_names();

// The paper's ablations (section 5 of the digest), each one change to the recipe:
//   none                  the full recipe
//   no-rft                the rft stage trains nothing: the actor goes from warm-up straight to PPO
//   no-value-pretraining  the value stage trains nothing: PPO starts with the warm-up's critic
//   continuous-reward     training rewards are the speed-up over torch.compile (t_compile / t of the best
//                         correct candidate; -1 when none is correct) instead of the milestones
// Held-out comparisons always score the milestone reward, so that variants are compared alike.
const std::vector<std::string>& ablation_names();

// What every stage needs.
struct StageContext {
  Preset preset;
  std::vector<agent::Task> train;
  std::shared_ptr<agent::Evaluator> evaluator;
  std::filesystem::path out;
  uint64_t seed = 1;
  std::string ablation = "none";                     // one of ablation_names()
  std::function<void(const std::string&)> progress;  // one line for people; may be empty
};

// The training reward of an episode whose best correct candidate is `best` (none: nullptr) and whose
// milestone reward is `milestone`, under the context's ablation.
double training_reward(const StageContext& c, const agent::Evaluation* best, double milestone);

// Files of a run directory.
std::filesystem::path checkpoint_path(const std::filesystem::path& out, const std::string& stage);
std::filesystem::path trajectories_path(const std::filesystem::path& out);
std::filesystem::path metrics_path(const std::filesystem::path& out);

// Runs one stage; continues from the stage's own checkpoint when it exists (a finished stage returns
// at once). Returns the stage's last metrics line.
StatusOr<OrderedJson> run_stage(const std::string& stage, const StageContext& context);

// A seed derived from the run's seed, a stage and an iteration (splitmix64): same inputs, same seed.
uint64_t derive_seed(uint64_t seed, const std::string& stage, uint64_t iteration);

}  // namespace kforge::rl
