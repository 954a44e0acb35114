// Features for learned policies: a fixed-length vector per state and one per action, all finite and
// roughly in [-1, 1] (counts and sizes through logs), the same length for every task. The rl layer
// reads them through the named index constants below; each constant's comment says what it holds.
#pragma once

#include <vector>

#include "agent/env.h"
#include "ir/op_registry.h"
#include "skills/skill.h"

namespace kforge::agent {

// Slots of the op-family histograms: one per family of the registry (ir/op_families.def), in that
// order, up to Full; families added after it (Logical, Index, Unfold, Pad, Resample,
// Order, CumExtreme, Scatter, Fold, Recurrent) share the slot of their
// kin (family_slot in features.cpp), so that the shipped checkpoint's dimensions stay.
constexpr int kNumOpFamilies = static_cast<int>(ir::OpFamily::kFull) + 1;

// Skill slots of the action one-hot: the catalogue (skills::all_skills()) in its order, padded to this
// many so that adding a skill does not change the dimensions (a checked invariant: the catalogue fits).
constexpr int kMaxSkills = 24;
static_assert(skills::kNumSkills <= kMaxSkills,
              "the skill catalogue outgrew agent::kMaxSkills: raise it (and retrain)");

// ---- State features ----
// [kStateFamilies, +kNumOpFamilies): fraction of the graph's nodes in each op family.
constexpr int kStateFamilies = 0;
// log10(1 + graph FLOPs) / 15 (multiply-add = 2, from costmodel::node_flops).
constexpr int kStateLogFlops = kStateFamilies + kNumOpFamilies;
// log10(1 + the graph's floor bytes: inputs, params and outputs once) / 12.
constexpr int kStateLogBytes = kStateLogFlops + 1;
// log2(1 + nodes) / 8.
constexpr int kStateLogNodes = kStateLogBytes + 1;
// log2(1 + kernels of the current schedule) / 8.
constexpr int kStateLogKernels = kStateLogNodes + 1;
// Fraction of nodes that share their kernel with another node (fused).
constexpr int kStateFusedFraction = kStateLogKernels + 1;
// Precision one-hot: fp32, tf32, 3xtf32 (three entries).
constexpr int kStatePrecision = kStateFusedFraction + 1;
// -log10(tolerance) / 4: 0.5 for cuda-agent's 1e-2, 1 for kernelbench's 1e-4.
constexpr int kStateTolerance = kStatePrecision + 3;
// Protocol one-hot: cuda-agent, kernelbench (two entries).
constexpr int kStateProtocol = kStateTolerance + 1;
// turn / max_turns.
constexpr int kStateTurn = kStateProtocol + 2;
// ln(t_candidate / t_eager) of the last evaluation, clipped to [-4, 4] and divided by 4 (0 if unknown).
constexpr int kStateLastVsEager = kStateTurn + 1;
// ln(t_candidate / t_compile) of the last evaluation, as above.
constexpr int kStateLastVsCompile = kStateLastVsEager + 1;
// ln(t_best / t_eager) of the best correct candidate so far, as above.
constexpr int kStateBestVsEager = kStateLastVsCompile + 1;
// ln(t_best / t_compile) of the best correct candidate so far, as above.
constexpr int kStateBestVsCompile = kStateBestVsEager + 1;
// The best candidate's milestone reward / 3 (-1/3 when there is none).
constexpr int kStateBestReward = kStateBestVsCompile + 1;
// 1 if the last evaluation's times are predicted (cost model), 0 if measured.
constexpr int kStatePredicted = kStateBestReward + 1;
// Outcome one-hot of the last evaluation, in sandbox::Outcome's order (seven entries).
constexpr int kStateOutcome = kStatePredicted + 1;
constexpr int kNumOutcomes = 7;
constexpr int kStateDim = kStateOutcome + kNumOutcomes;

// ---- Action features ----
// [kActionSkill, +kMaxSkills): one-hot of the action's skill in catalogue order (all zero for stop).
constexpr int kActionSkill = 0;
// 1 for stop.
constexpr int kActionStop = kActionSkill + kMaxSkills;
// log2(1 + kernels at the site) / 4.
constexpr int kActionLogKernels = kActionStop + 1;
// The predicted relative change of program cost if the action were applied, (after - before) / before,
// clipped to [-1, 1] (one-step look-ahead with the roofline cost model; 0 for stop). Negative: faster.
constexpr int kActionCostChange = kActionLogKernels + 1;
// 1 if applying the action failed (the skill refused the site); the change above is then 0.
constexpr int kActionApplyFailed = kActionCostChange + 1;
// [kActionFamilies, +kNumOpFamilies): fraction of the site's nodes in each op family.
constexpr int kActionFamilies = kActionApplyFailed + 1;
constexpr int kActionDim = kActionFamilies + kNumOpFamilies;

// The state's features: the task's graph, the observation's schedule, evaluations and turn.
std::vector<float> state_features(const Task& task, const Observation& obs, int max_turns);

// One action's features on schedule `s` of `task` (`s_seconds`: the cost model's time of `s`).
std::vector<float> action_features(const Task& task, const schedule::Schedule& s, double s_seconds,
                                   const Action& action);

}  // namespace kforge::agent
