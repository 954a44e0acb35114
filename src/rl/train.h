// `kforge train` as a library call (issue #5): the run directory, the task set (given, or synthesized
// with the synth library), the train / held-out split, the paper's stages, and the comparison of the
// learned policy with the random and heuristic ones on the held-out tasks at equal evaluation budget.
//
// Run directory: train.json (the run's settings), <stage>.pt (each stage's checkpoint, written after
// every iteration), trajectories.jsonl (collect), metrics.jsonl (one line per stage iteration),
// comparison.json, synth/ when the tasks were synthesized, and candidates/ (the GPU evaluator's builds)
// when the device is cuda.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::rl {

struct TrainOptions {
  std::string stage = "all";       // warmup, collect, rft, value, ppo or all
  std::vector<std::string> tasks;  // dataset / suite directories or problem files; empty: synthesize
  // When given, the final comparison runs on these tasks (all of them) instead of the held-out split,
  // and adds the search and exhaustive policies (issue #5's check: the learned policy's share of
  // exhaustive search's geomean speed-up, and of its evaluations).
  std::vector<std::string> eval_tasks;
  // Evaluation logs of `kforge explore` (agent/evaluation_log.h): with eval_tasks, the comparison replays
  // their recorded evaluations (GPU measurements, made elsewhere) instead of evaluating, on the eval
  // tasks the logs explored completely; training itself stays on `device`.
  std::vector<std::string> replay;
  std::string correction;  // a `kforge costmodel fit --out` file: the cost model corrected by it (device cpu)
  std::string out;
  std::string preset = "ci";
  std::string protocol = "cuda-agent";
  std::string device = "cpu";     // how episodes are judged: cpu (cost model), cuda (GPU harness) or auto
  std::string ablation = "none";  // one of rl::ablation_names() (stages.h): the recipe with one part changed
  uint64_t seed = 1;
  bool resume = false;                               // continue the stages' checkpoints in `out`
  bool force = false;                                // redo the stages even if `out` holds their results
  std::function<void(const std::string&)> progress;  // one line for people; may be empty
};

struct TrainResult {
  OrderedJson report;  // {"learned": {...}, "random": {...}, "heuristic": {...}, "budget": N, ...}; with
                       // eval_tasks also "search" and "exhaustive"
  std::string table;   // the comparison for people (empty when the stages run did not end with ppo)
};

StatusOr<TrainResult> run_training(const TrainOptions& options);

}  // namespace kforge::rl
