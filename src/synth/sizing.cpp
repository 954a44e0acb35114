// predict_eager (importer graph -> C++ IR -> one kernel per op -> roofline) and batch sizing.
#include "synth/sizing.h"

#include <algorithm>
#include <cmath>

#include "costmodel/roofline.h"
#include "ir/graph.h"
#include "schedule/planner.h"

namespace kforge::synth {

StatusOr<EagerPrediction> predict_eager(const Json& graph, const std::string& what) {
  KF_ASSIGN_OR_RETURN(ir::Graph g, ir::graph_from_json(graph, what));
  schedule::Schedule s = schedule::plan_one_kernel_per_op(g);
  KF_RETURN_IF_ERROR(schedule::check_schedule(g, s));
  costmodel::DeviceCeilings ceilings;
  costmodel::ProgramCost cost = costmodel::program_cost(g, s, ceilings);
  EagerPrediction p;
  p.seconds = cost.seconds;
  p.kernels = static_cast<int>(s.kernels.size());
  p.device = ceilings.name;
  for (const auto& v : g.values()) p.value_bytes.push_back(static_cast<int64_t>(v.type.bytes()));
  for (const auto& n : g.nodes()) p.registry_ops.push_back(ir::op_info(n.op).name);
  if (!g.outputs().empty()) p.output_shape = g.type(g.outputs()[0]).shape;
  return p;
}

int64_t max_batch(const EagerPrediction& at1, const EagerPrediction& at2, const RuntimeWindow& w) {
  double limit = 1e15;
  double fixed = 0;
  double per_sample = 0;
  const size_t n = std::min(at1.value_bytes.size(), at2.value_bytes.size());
  for (size_t i = 0; i < n; ++i) {
    double a = static_cast<double>(at1.value_bytes[i]);
    double slope = static_cast<double>(at2.value_bytes[i]) - a;
    fixed += a - slope;
    per_sample += slope;
    if (slope > 0) limit = std::min(limit, 1 + (static_cast<double>(w.max_tensor_bytes) - a) / slope);
  }
  if (per_sample > 0) limit = std::min(limit, (static_cast<double>(w.max_total_bytes) - fixed) / per_sample);
  limit = std::min(limit, static_cast<double>(w.max_batch));
  return std::max<int64_t>(0, static_cast<int64_t>(std::floor(limit)));
}

int64_t round_batch(int64_t b) {
  if (b < 64) return b;
  if (b < 1024) return b / 8 * 8;
  return b / 64 * 64;
}

int64_t batch_for_target(int64_t b1, double t1, int64_t b2, double t2, double target, int64_t limit) {
  double slope = (t2 - t1) / static_cast<double>(b2 - b1);
  double b = slope > 0 ? static_cast<double>(b1) + (target - t1) / slope : static_cast<double>(limit);
  b = std::clamp(b, 2.0, static_cast<double>(std::max<int64_t>(limit, 2)));
  return std::max<int64_t>(2, round_batch(static_cast<int64_t>(b)));
}

}  // namespace kforge::synth
