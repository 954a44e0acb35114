// The evaluator every machine has: the roofline cost model (costmodel/roofline.h). Its times are
// predictions for an H200 and are labelled so; correctness comes from the skills' legality checks.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/env.h"
#include "costmodel/correction.h"

namespace kforge::agent {

// The milestone reward on predicted times: sandbox::milestone_reward_of_times (one rule for both).
using sandbox::milestone_reward_of_times;

// Predicted baselines of a task: eager = the first schedule (one kernel per op, fp32);
// torch.compile = that schedule with every fuse_elementwise site applied (inductor fuses pointwise
// chains), fp32.
struct PredictedBaselines {
  double t_eager = 0;
  double t_compile = 0;
};
StatusOr<PredictedBaselines> predicted_baselines(const Task& task, const costmodel::Correction* correction = nullptr);

class CostModelEvaluator : public Evaluator {
 public:
  // With a correction (costmodel/correction.h, fitted on GPU measurements), every time (candidate,
  // eager, torch.compile) is the roofline's times the correction's factor for that schedule.
  explicit CostModelEvaluator(std::optional<costmodel::Correction> correction = std::nullopt)
      : correction_(std::move(correction)) {}
  std::string name() const override {
    return correction_ ? "cost model (predicted: roofline + learned correction)" : "cost model (predicted)";
  }
  // ok with the predicted time when the schedule is well-formed and its precision fits the task's
  // tolerance; wrong_answer when the precision exceeds the tolerance; compile_error when the
  // schedule is malformed. Thread-safe (baselines are cached per task under a lock).
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override;

 private:
  StatusOr<PredictedBaselines> baselines(const Task& task);

  double seconds(const Task& task, const schedule::Schedule& s) const;

  std::optional<costmodel::Correction> correction_;
  std::mutex mutex_;
  std::map<std::string, PredictedBaselines> baselines_;  // by task name, protocol and node count
};

}  // namespace kforge::agent
