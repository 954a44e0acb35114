// The learned policy's networks (issue #5): an actor that scores each legal action from
// concat(state features, action features) with a small MLP (softmax over the observation's actions,
// which are only the legal ones), and a critic, an MLP from the state features to a value. Torch stays
// behind Impl (rl/torch_nets.h), so that code including this header does not compile torch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/action_space.h"
#include "base/status.h"
#include "rl/trajectory.h"

namespace kforge::rl {

struct NetworkDims {
  int state_dim = 0;
  int action_dim = 0;
  int hidden = 64;
  bool operator==(const NetworkDims&) const = default;
};

// Where training stands, saved with the weights: the stage that wrote the checkpoint and how many of
// its iterations are done.
struct TrainingCounters {
  std::string stage;  // "init", "warmup", "rft", "value", "ppo"
  int iteration = 0;
};

class ActorCritic {
 public:
  // Fresh weights from `seed` (same seed, same weights), Adam optimizers at the given learning rates.
  static ActorCritic create(const NetworkDims& dims, uint64_t seed, double actor_lr = 3e-4, double critic_lr = 1e-3);
  // Reads a checkpoint written by save(): weights, optimizer state, counters and dims.
  static StatusOr<ActorCritic> load(const std::string& path);
  // Writes atomically: a temporary file in the same directory, then a rename.
  Status save(const std::string& path) const;

  const NetworkDims& dims() const;
  TrainingCounters counters;
  // The action space the networks were made with (agent/action_space.h): this kforge's for fresh weights,
  // the file's for a loaded checkpoint (nullopt: a checkpoint written before checkpoints carried it).
  std::optional<agent::ActionSpaceVersion> action_space;

  // log pi(a | s) of each of `actions` (A, F) in state `state` (S).
  std::vector<double> log_probs(const std::vector<float>& state, const std::vector<std::vector<float>>& actions) const;
  double value(const std::vector<float>& state) const;
  // Batched forms, for training: the chosen action's log-probability, and the critic's values.
  std::vector<double> chosen_log_probs(const std::vector<const Decision*>& decisions) const;
  std::vector<double> values(const std::vector<const std::vector<float>*>& states) const;

  void set_learning_rates(double actor_lr, double critic_lr);

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  explicit ActorCritic(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// Checks that observations with these feature lengths fit the networks; the message says what differs.
Status check_dims(const NetworkDims& dims, int state_dim, int action_dim);

// The command that makes the checkpoint at `path` again for this kforge (the shipped policy's recipe for
// policies/learned-ci.pt, else `kforge train`).
std::string checkpoint_refresh_command(const std::string& path);

// Checks that `net` (read from `path`) was made with this kforge's action space and feature sizes; the
// message names both versions (what changed) and the command that makes it again.
Status check_action_space(const ActorCritic& net, const std::string& path);

// Makes the actor read the skill slots of the action features (agent::kActionSkill) by skill name: the
// first layer's column of each skill moves from its slot in the checkpoint's catalogue to its slot in this
// kforge's, and a skill the checkpoint never saw gets a zero column (no learned preference). `net.action_space`
// then lists today's skills. Returns the skills it never saw. Refused (invalid_argument) for a checkpoint
// whose action space is unknown or whose feature sizes differ; the optimizer state is not moved (a remapped
// network is for acting, not for resuming training).
StatusOr<std::vector<std::string>> remap_skill_slots(ActorCritic& net);

}  // namespace kforge::rl
