// One candidate task through the whole pipeline: compose (C++), import and size (worker + cost
// model), execution filters (worker), runtime window (cost model), contamination (AST similarity).
// Every outcome, a broken worker included, is a CandidateRecord: failures are data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synth/composer.h"
#include "synth/record.h"
#include "synth/similarity.h"
#include "synth/sizing.h"
#include "synth/worker.h"

namespace kforge::synth {

struct SynthContext {
  uint64_t seed = 1;
  ComposeOptions compose;
  RuntimeWindow window;
  double min_target_seconds = 1.5e-3;  // the batch is sized for a predicted time drawn log-uniformly
  double max_target_seconds = 50e-3;   // in [min, max): inside the window with a margin
  int small_batch = 2;                 // the batch of the CPU (eager) run
  std::vector<BenchmarkProblem> benchmarks;
  double request_timeout_seconds = 300;
};

// The task seed of candidate `index` of a run.
uint64_t task_seed(uint64_t run_seed, int64_t index);

// "000042_Conv2d_ReLU.py"
std::string task_file_name(int64_t index, const std::string& title);

CandidateRecord evaluate_candidate(const SynthContext& ctx, int64_t index, SynthWorker& worker);

}  // namespace kforge::synth
