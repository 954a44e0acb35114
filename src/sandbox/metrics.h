// Suite metrics as the CUDA Agent paper defines them, computed from results alone.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "sandbox/result.h"

namespace kforge::sandbox {

struct SuiteMetrics {
  int problems = 0;
  int correct = 0;                                 // outcome ok and verified on a GPU
  int timed = 0;                                   // correct with a measured candidate time
  int built = 0;                                   // everything but compile errors
  double pass_rate = 0;                            // correct / problems
  std::optional<double> faster_than_eager;         // (correct and t < t_eager) / problems
  std::optional<double> faster_than_compile;       // (correct and t < t_compile) / problems
  std::optional<double> speedup_vs_eager;          // geometric mean of t_eager / t over correct, timed problems
  std::optional<double> speedup_vs_compile;        // same against torch.compile
  std::optional<double> faster_than_compile_tf32;  // against torch.compile with TF32 matmuls (precision-matched)
  std::optional<double> speedup_vs_compile_tf32;
  // The other baselines timed (EvalResult::t_baselines, e.g. compile_max_autotune): the same two figures.
  std::map<std::string, double> faster_than_baseline;
  std::map<std::string, double> speedup_vs_baseline;
  int warned = 0;                            // results with a warning (a tolerance too loose for an output)
  std::optional<double> median_floor_ratio;  // median of t_floor / t (cost model floor over candidate time)
  std::optional<double> mean_reward;         // milestone reward, averaged where defined
  std::optional<double> max_repeat_diff;     // max over timed problems of |t_repeat - t| / t: timing noise
  bool predicted = false;                    // any result predicted: no correctness, no speed claims
};

// `floors[i]` is the cost model's floor for results[i] (seconds), if known.
SuiteMetrics suite_metrics(const std::vector<EvalResult>& results, const std::vector<std::optional<double>>& floors);

}  // namespace kforge::sandbox
