// Combinatorial composition (the paper's stage 2): draws 1..max_ops operator classes and stacks them
// sequentially into one Model with shape-compatible arguments, every draw from the task's seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "synth/rng.h"
#include "synth/seed_library.h"
#include "synth/task_source.h"
#include "synth/tensor_state.h"

namespace kforge::synth {

struct ComposeOptions {
  int max_ops = 5;
  double max_sample_flops = 2e8;                   // per sample: keeps the scaled-down CPU run short
  int64_t max_sample_elements = int64_t{1} << 22;  // per sample, any tensor
};

struct ComposedTask {
  std::vector<const SeedOp*> ops;  // in the order they are applied
  TaskSource source;               // render(batch) gives the file
  TensorState input;               // x, the first input
  TensorState output;              // what forward returns
  double sample_flops = 0;
  int64_t max_sample_elements = 0;  // the largest tensor per sample, inputs and outputs of every op

  std::vector<std::string> op_names() const;
  std::string data_source() const { return "torch#" + std::to_string(ops.size()); }
  // "Conv2d_ReLU_AvgPool2d": for file names, as KernelBench names its problems.
  std::string short_title() const;
};

// The share of tasks with 1, 2, ... operators (the paper's Table 3, renormalized to max_ops).
std::vector<double> op_count_weights(int max_ops);

// Draws one task. nullopt only when no composition fits after many tries (a library bug).
std::optional<ComposedTask> compose_task(const SeedLibrary& lib, Rng& rng, const ComposeOptions& options);

// A task of exactly these operators in this order (arguments and sizes drawn); nullopt when they do
// not stack. For tests and for people who want one combination.
std::optional<ComposedTask> compose_sequence(const SeedLibrary& lib, const std::vector<const SeedOp*>& ops, Rng& rng,
                                             const ComposeOptions& options);

}  // namespace kforge::synth
