// Pass rate, faster rates, geometric-mean speed-ups and floor ratios over a suite's results.
#include "sandbox/metrics.h"

#include <algorithm>
#include <cmath>

namespace kforge::sandbox {

SuiteMetrics suite_metrics(const std::vector<EvalResult>& results, const std::vector<std::optional<double>>& floors) {
  SuiteMetrics m;
  m.problems = static_cast<int>(results.size());
  if (results.empty()) return m;
  int faster_eager = 0;
  int faster_compile = 0;
  int with_eager = 0;
  int with_compile = 0;
  double log_eager = 0;
  double log_compile = 0;
  int faster_compile_tf32 = 0;
  int with_compile_tf32 = 0;
  double log_compile_tf32 = 0;
  std::map<std::string, int> faster_other, with_other;
  std::map<std::string, double> log_other;
  std::vector<double> floor_ratios;
  double reward_sum = 0;
  int rewarded = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const EvalResult& r = results[i];
    if (r.predicted) m.predicted = true;
    if (r.outcome != Outcome::kCompileError) ++m.built;
    if (auto reward = milestone_reward(r)) {
      reward_sum += *reward;
      ++rewarded;
    }
    if (r.t_candidate && *r.t_candidate > 0 && i < floors.size() && floors[i])
      floor_ratios.push_back(*floors[i] / *r.t_candidate);
    if (!r.warnings.empty()) ++m.warned;
    if (r.outcome != Outcome::kOk || r.predicted) continue;
    ++m.correct;
    if (!r.t_candidate || *r.t_candidate <= 0) continue;
    ++m.timed;
    const double t = *r.t_candidate;
    if (auto noise = timing_flags(r).noise) m.max_repeat_diff = std::max(m.max_repeat_diff.value_or(0.0), *noise);
    if (r.t_eager && *r.t_eager > 0) {
      ++with_eager;
      log_eager += std::log(*r.t_eager / t);
      if (t < *r.t_eager) ++faster_eager;
    }
    if (r.t_compile && *r.t_compile > 0) {
      ++with_compile;
      log_compile += std::log(*r.t_compile / t);
      if (t < *r.t_compile) ++faster_compile;
    }
    if (r.t_compile_tf32 && *r.t_compile_tf32 > 0) {
      ++with_compile_tf32;
      log_compile_tf32 += std::log(*r.t_compile_tf32 / t);
      if (t < *r.t_compile_tf32) ++faster_compile_tf32;
    }
    for (const auto& [name, tb] : r.t_baselines) {
      if (tb <= 0) continue;
      ++with_other[name];
      log_other[name] += std::log(tb / t);
      if (t < tb) ++faster_other[name];
    }
  }
  const double n = m.problems;
  m.pass_rate = m.correct / n;
  if (with_eager > 0) {
    m.faster_than_eager = faster_eager / n;
    m.speedup_vs_eager = std::exp(log_eager / with_eager);
  }
  if (with_compile > 0) {
    m.faster_than_compile = faster_compile / n;
    m.speedup_vs_compile = std::exp(log_compile / with_compile);
  }
  if (with_compile_tf32 > 0) {
    m.faster_than_compile_tf32 = faster_compile_tf32 / n;
    m.speedup_vs_compile_tf32 = std::exp(log_compile_tf32 / with_compile_tf32);
  }
  for (const auto& [name, count] : with_other) {
    m.faster_than_baseline[name] = faster_other[name] / n;
    m.speedup_vs_baseline[name] = std::exp(log_other[name] / count);
  }
  if (!floor_ratios.empty()) {
    std::sort(floor_ratios.begin(), floor_ratios.end());
    size_t k = floor_ratios.size();
    m.median_floor_ratio = k % 2 ? floor_ratios[k / 2] : 0.5 * (floor_ratios[k / 2 - 1] + floor_ratios[k / 2]);
  }
  if (rewarded > 0) m.mean_reward = reward_sum / rewarded;
  return m;
}

}  // namespace kforge::sandbox
