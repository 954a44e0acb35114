// CostModelEvaluator: predicted times and the milestone reward on them.
#include "agent/cost_model_evaluator.h"

#include "costmodel/measurements.h"
#include "costmodel/roofline.h"
#include "schedule/planner.h"
#include "skills/fuse_elementwise.h"
#include "skills/precision.h"

namespace kforge::agent {

namespace {

constexpr const char* kPredictedDevice = "cpu (roofline of NVIDIA H200)";

std::string task_key(const Task& task) {
  return task.name + "|" + task.protocol + "|" + std::to_string(task.graph.nodes().size());
}

}  // namespace

// The roofline's time of `s`, times the correction's factor when there is one.
static double predicted_seconds(const ir::Graph& g, const schedule::Schedule& s,
                                const costmodel::Correction* correction) {
  const costmodel::ProgramCost cost = costmodel::program_cost(g, s);
  if (correction == nullptr) return cost.seconds;
  return correction->corrected_seconds(cost.seconds, costmodel::candidate_features(g, s, cost));
}

StatusOr<PredictedBaselines> predicted_baselines(const Task& task, const costmodel::Correction* correction) {
  KF_ASSIGN_OR_RETURN(double tolerance, protocol_tolerance(task.protocol));
  const ir::Graph& g = task.graph;
  schedule::Schedule eager = schedule::plan_one_kernel_per_op(g, {.precision = "fp32", .tolerance = tolerance});
  schedule::Schedule compiled = eager;
  for (size_t guard = 0; guard < g.nodes().size() + 1; ++guard) {
    auto sites = skills::fuse_elementwise_sites(g, compiled);
    if (sites.empty()) break;
    KF_ASSIGN_OR_RETURN(compiled, skills::fuse_elementwise(g, compiled, sites.front()));
  }
  return PredictedBaselines{predicted_seconds(g, eager, correction), predicted_seconds(g, compiled, correction)};
}

StatusOr<PredictedBaselines> CostModelEvaluator::baselines(const Task& task) {
  const std::string key = task_key(task);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = baselines_.find(key);
    if (it != baselines_.end()) return it->second;
  }
  KF_ASSIGN_OR_RETURN(PredictedBaselines b, predicted_baselines(task, correction_ ? &*correction_ : nullptr));
  std::lock_guard<std::mutex> lock(mutex_);
  baselines_.emplace(key, b);
  return b;
}

StatusOr<Evaluation> CostModelEvaluator::evaluate(const Task& task, const schedule::Schedule& s) {
  KF_ASSIGN_OR_RETURN(PredictedBaselines base, baselines(task));
  Evaluation e;
  sandbox::EvalResult& r = e.result;
  r.protocol = task.protocol;
  r.device = kPredictedDevice;
  r.predicted = true;
  r.t_eager = base.t_eager;
  r.t_compile = base.t_compile;
  if (Status st = schedule::check_schedule(task.graph, s); !st.is_ok()) {
    r.outcome = sandbox::Outcome::kCompileError;
    r.message = st.message();
  } else if (s.precision != "fp32" && s.precision != "3xtf32" && s.tolerance < skills::kTf32MinTolerance) {
    r.outcome = sandbox::Outcome::kWrongAnswer;
    r.message = "precision " + s.precision + " cannot keep the tolerance " + std::to_string(s.tolerance);
  } else {
    r.outcome = sandbox::Outcome::kOk;
    r.t_candidate = predicted_seconds(task.graph, s, correction_ ? &*correction_ : nullptr);
  }
  e.reward = milestone_reward_of_times(r);
  return e;
}

}  // namespace kforge::agent
