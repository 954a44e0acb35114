// The runtime filter's numbers: the eager time of a task on the H200 as the cost model predicts it
// (one kernel per op of the imported graph, roofline plus launch), and the batch size that puts a
// task inside the paper's 1-100 ms window. On a machine without the GPU these are predictions and
// are always labelled so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::synth {

struct EagerPrediction {
  double seconds = 0;                     // predicted eager time of forward
  int kernels = 0;                        // one per op: eager PyTorch launches about that many
  std::vector<int64_t> value_bytes;       // every value of the graph (inputs, params, nodes) in order
  std::vector<std::string> registry_ops;  // the graph's ops in order
  std::vector<int64_t> output_shape;      // the first output's shape
  std::string device;                     // the ceilings' name
};

// Parses graph JSON (the importer's), re-infers its shapes in the C++ IR (a graph our spine cannot
// read is an error) and prices it.
StatusOr<EagerPrediction> predict_eager(const Json& graph, const std::string& what);

struct RuntimeWindow {
  double min_seconds = 1e-3;  // the paper's window: 1 to 100 ms of eager time
  double max_seconds = 100e-3;
  int64_t max_tensor_bytes = int64_t{8} << 30;  // one tensor (the H200 has 141 GB)
  int64_t max_total_bytes = int64_t{48} << 30;  // every value of the graph together
  int64_t max_batch = 32768;                    // the largest batch_size KernelBench uses
  bool contains(double seconds) const { return seconds >= min_seconds && seconds <= max_seconds; }
};

// The largest batch within the window's caps: its memory caps, from the graphs at batch 1 and 2
// (sizes are affine in the batch: parameters stay, activations grow), and its batch cap.
int64_t max_batch(const EagerPrediction& at1, const EagerPrediction& at2, const RuntimeWindow& w);

// The batch at which the line through (b1, t1) and (b2, t2) reaches `target` seconds, rounded to a
// size people use (multiples of 8, 16 or 64 as it grows), within [2, limit].
int64_t batch_for_target(int64_t b1, double t1, int64_t b2, double t2, double target, int64_t limit);

int64_t round_batch(int64_t b);

}  // namespace kforge::synth
