// State and action features (layout and meaning in features.h).
#include "agent/features.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "costmodel/roofline.h"

namespace kforge::agent {

namespace {

float clip(double x, double lo, double hi) {
  if (!std::isfinite(x)) return 0.0f;
  return static_cast<float>(std::clamp(x, lo, hi));
}

// ln(t / t0) clipped to [-4, 4] and scaled to [-1, 1]; 0 when either time is unknown.
float log_ratio(const std::optional<double>& t, const std::optional<double>& t0) {
  if (!t || !t0 || *t <= 0 || *t0 <= 0) return 0.0f;
  return clip(std::log(*t / *t0), -4.0, 4.0) / 4.0f;
}

// The histogram slot of a family: its own, or its kin's for families added after the checkpoint.
int family_slot(ir::OpFamily f) {
  switch (f) {
    case ir::OpFamily::kLogical: return static_cast<int>(ir::OpFamily::kCompare);
    case ir::OpFamily::kIndex: return static_cast<int>(ir::OpFamily::kSelect);
    case ir::OpFamily::kUnfold: return static_cast<int>(ir::OpFamily::kSlice);
    case ir::OpFamily::kPad: return static_cast<int>(ir::OpFamily::kCat);
    case ir::OpFamily::kResample: return static_cast<int>(ir::OpFamily::kAdaptivePool);
    case ir::OpFamily::kOrder: return static_cast<int>(ir::OpFamily::kArgReduce);
    case ir::OpFamily::kCumExtreme: return static_cast<int>(ir::OpFamily::kScan);
    case ir::OpFamily::kScatter: return static_cast<int>(ir::OpFamily::kSelect);
    case ir::OpFamily::kFold: return static_cast<int>(ir::OpFamily::kSlice);
    case ir::OpFamily::kRecurrent: return static_cast<int>(ir::OpFamily::kLinear);
    case ir::OpFamily::kFft: return static_cast<int>(ir::OpFamily::kMatmul);
    default: break;
  }
  const int slot = static_cast<int>(f);
  KF_CHECK(slot < kNumOpFamilies) << "op family " << ir::family_name(f) << " has no feature slot: give it its kin's";
  return slot;
}

void add_family_histogram(const ir::Graph& g, const std::vector<int>& nodes, std::vector<float>& out, int offset) {
  if (nodes.empty()) return;
  const float share = 1.0f / static_cast<float>(nodes.size());
  for (int n : nodes) {
    const int slot = family_slot(ir::op_info(g.nodes()[static_cast<size_t>(n)].op).family);
    out[static_cast<size_t>(offset + slot)] += share;
  }
}

double graph_flops(const ir::Graph& g) {
  double flops = 0;
  for (const auto& n : g.nodes()) flops += costmodel::node_flops(g, n);
  return flops;
}

double graph_floor_bytes(const ir::Graph& g) {
  double bytes = 0;
  for (const auto& in : g.inputs()) bytes += static_cast<double>(g.type(in.value).bytes());
  for (const auto& p : g.params()) bytes += static_cast<double>(g.type(p.value).bytes());
  for (auto o : g.outputs()) bytes += static_cast<double>(g.type(o).bytes());
  return bytes;
}

int skill_slot(const std::string& name) {
  const auto& skills = skills::all_skills();
  KF_CHECK(static_cast<int>(skills.size()) <= kMaxSkills)
      << "the skill catalogue outgrew agent::kMaxSkills (" << kMaxSkills << "): raise it";
  for (size_t i = 0; i < skills.size(); ++i) {
    if (skills[i].name == name) return static_cast<int>(i);
  }
  KF_CHECK(false) << "unknown skill " << name;
  return -1;
}

}  // namespace

std::vector<float> state_features(const Task& task, const Observation& obs, int max_turns) {
  const ir::Graph& g = task.graph;
  const schedule::Schedule& s = obs.schedule;
  std::vector<float> f(kStateDim, 0.0f);
  std::vector<int> all_nodes(g.nodes().size());
  for (size_t i = 0; i < all_nodes.size(); ++i) all_nodes[i] = static_cast<int>(i);
  add_family_histogram(g, all_nodes, f, kStateFamilies);
  f[kStateLogFlops] = clip(std::log10(1.0 + graph_flops(g)) / 15.0, 0.0, 2.0);
  f[kStateLogBytes] = clip(std::log10(1.0 + graph_floor_bytes(g)) / 12.0, 0.0, 2.0);
  f[kStateLogNodes] = clip(std::log2(1.0 + static_cast<double>(g.nodes().size())) / 8.0, 0.0, 2.0);
  f[kStateLogKernels] = clip(std::log2(1.0 + static_cast<double>(s.kernels.size())) / 8.0, 0.0, 2.0);
  size_t fused = 0;
  for (const auto& k : s.kernels) {
    if (k.nodes.size() > 1) fused += k.nodes.size();
  }
  f[kStateFusedFraction] = g.nodes().empty() ? 0.0f : static_cast<float>(fused) / static_cast<float>(g.nodes().size());
  f[kStatePrecision + 0] = s.precision == "fp32" ? 1.0f : 0.0f;
  f[kStatePrecision + 1] = s.precision == "tf32" ? 1.0f : 0.0f;
  f[kStatePrecision + 2] = s.precision == "3xtf32" ? 1.0f : 0.0f;
  f[kStateTolerance] = s.tolerance > 0 ? clip(-std::log10(s.tolerance) / 4.0, 0.0, 2.0) : 0.0f;
  f[kStateProtocol + 0] = task.protocol == "cuda-agent" ? 1.0f : 0.0f;
  f[kStateProtocol + 1] = task.protocol == "kernelbench" ? 1.0f : 0.0f;
  f[kStateTurn] = max_turns > 0 ? clip(static_cast<double>(obs.turn) / max_turns, 0.0, 1.0) : 0.0f;
  const sandbox::EvalResult& last = obs.last.result;
  f[kStateLastVsEager] = log_ratio(last.t_candidate, last.t_eager);
  f[kStateLastVsCompile] = log_ratio(last.t_candidate, last.t_compile);
  if (obs.best) {
    const sandbox::EvalResult& best = obs.best->result;
    f[kStateBestVsEager] = log_ratio(best.t_candidate, best.t_eager);
    f[kStateBestVsCompile] = log_ratio(best.t_candidate, best.t_compile);
    f[kStateBestReward] = static_cast<float>(obs.best->reward.value_or(-1)) / 3.0f;
  } else {
    f[kStateBestReward] = -1.0f / 3.0f;
  }
  f[kStatePredicted] = last.predicted ? 1.0f : 0.0f;
  f[static_cast<size_t>(kStateOutcome + static_cast<int>(last.outcome))] = 1.0f;
  return f;
}

std::vector<float> action_features(const Task& task, const schedule::Schedule& s, double s_seconds,
                                   const Action& action) {
  std::vector<float> f(kActionDim, 0.0f);
  if (action.is_stop()) {
    f[kActionStop] = 1.0f;
    return f;
  }
  const ir::Graph& g = task.graph;
  f[static_cast<size_t>(kActionSkill + skill_slot(action.skill))] = 1.0f;
  f[kActionLogKernels] = clip(std::log2(1.0 + static_cast<double>(action.site.kernels.size())) / 4.0, 0.0, 2.0);
  std::vector<int> nodes;
  for (int k : action.site.kernels) {
    if (k < 0 || k >= static_cast<int>(s.kernels.size())) continue;
    const auto& kn = s.kernels[static_cast<size_t>(k)].nodes;
    nodes.insert(nodes.end(), kn.begin(), kn.end());
  }
  add_family_histogram(g, nodes, f, kActionFamilies);
  const skills::Skill* skill = skills::find_skill(action.skill);
  auto after = skill->apply(g, s, action.site);
  if (!after.is_ok()) {
    f[kActionApplyFailed] = 1.0f;
    return f;
  }
  const double after_seconds = costmodel::program_cost(g, after.value()).seconds;
  if (s_seconds > 0) f[kActionCostChange] = clip((after_seconds - s_seconds) / s_seconds, -1.0, 1.0);
  return f;
}

}  // namespace kforge::agent
