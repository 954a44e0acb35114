// kforge train: the paper's training stages for the learned policy (issue #5); see src/rl/train.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kforge::cli {

struct TrainArgs {
  std::string stage = "all";            // warmup, collect, rft, value, ppo or all
  std::vector<std::string> tasks;       // dataset / suite directories or problem files (default: synthesize)
  std::vector<std::string> eval_tasks;  // when given, the final comparison runs on these (plus search, exhaustive)
  std::vector<std::string> replay;      // `kforge explore` logs: the comparison replays their evaluations
  std::string correction;               // `kforge costmodel fit --out` file: train on the corrected cost model
  std::string out;                      // the run directory
  std::string preset = "ci";            // ci (minutes on a laptop) or full (the paper's sizes)
  std::string protocol = "cuda-agent";
  std::string device = "cpu";     // cpu (cost model; the default: GPU episodes are slow), cuda or auto
  std::string ablation = "none";  // the paper's ablations: none, no-rft, no-value-pretraining, continuous-reward
  uint64_t seed = 1;
  bool resume = false;
  bool force = false;
  std::string json_out;  // also write the report here
};
// Registers `kforge train` and its options on `app`; returns the subcommand.
CLI::App* add_train_subcommand(CLI::App& app, TrainArgs& a);
int run_train(const TrainArgs& a);

}  // namespace kforge::cli
