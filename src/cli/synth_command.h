// kforge synth: training tasks made the CUDA Agent paper's way (issue #6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::cli {

struct SynthArgs {
  int count = 6000;                  // accepted tasks wanted
  uint64_t seed = 1;                 // every draw comes from it; same seed, same dataset
  std::string out;                   // the dataset directory (tasks, index.jsonl, report)
  std::vector<std::string> against;  // benchmark directories for the contamination check
  int max_ops = 5;                   // operators per task, at most
  int jobs = 0;                      // parallel workers (0: all cores)
  bool resume = false;               // continue an interrupted run in `out`
  bool json = false;                 // print the report as JSON
};
int run_synth(const SynthArgs& a);

}  // namespace kforge::cli
