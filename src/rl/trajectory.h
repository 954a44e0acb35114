// Trajectories as training keeps them: decision points (state features, the legal actions' features,
// the choice), the episode's outcome, JSONL storage, and the rejection fine-tuning filter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::rl {

// One decision point: what the policy saw and which action it took.
struct Decision {
  std::vector<float> state;                 // (S)
  std::vector<std::vector<float>> actions;  // (A, F), the legal actions, stop last
  int chosen = 0;
};

// One multi-turn episode.
struct Trajectory {
  std::string task;
  uint64_t seed = 0;
  std::vector<Decision> decisions;
  std::vector<std::string> action_names;  // Action::describe() of each choice
  std::vector<std::string> outcomes;      // of the evaluation after each step ("ok", "compile_error", ...)
  std::vector<std::string> schedules;     // a fingerprint of the schedule each decision was taken on
  double reward = -1;                     // the episode's milestone reward
  bool faster_than_compile = false;
  int evaluations = 0;
};

OrderedJson trajectory_to_json(const Trajectory& t);
StatusOr<Trajectory> trajectory_from_json(const Json& j);

// Reads a JSONL file of trajectories. A torn last line (a kill while writing) is dropped, and
// `complete_bytes` (when given) receives the length of the intact prefix so that a writer can resume.
StatusOr<std::vector<Trajectory>> read_trajectories(const std::string& path, int64_t* complete_bytes = nullptr);

// The paper's rejection fine-tuning filter: episodes with reward > 0 only; within them, drop the
// decisions of redundant loops (from a schedule to the step that returned to it) and the actions whose
// evaluation was not "ok" (invalid actions).
struct RftFilterStats {
  int episodes = 0;
  int kept_episodes = 0;
  int decisions = 0;
  int kept_decisions = 0;
  int dropped_loops = 0;
  int dropped_invalid = 0;
};
std::vector<const Decision*> rft_filter(const std::vector<Trajectory>& trajectories, RftFilterStats* stats);

}  // namespace kforge::rl
