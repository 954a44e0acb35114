// The schedule: how a graph is computed (partition into kernels, implementation and knobs of each,
// global choices). A value separate from the graph; skills are the only way it changes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "ir/graph.h"
#include "schedule/catalogue.h"

namespace kforge::schedule {

enum class Impl {
  kGenerated,  // a CUDA kernel we emit from a template
  kLibrary,    // a call into cuBLAS / cuDNN / CUB
  kAlias,      // no work: the output is a view of the input's buffer (reshape of contiguous data)
};

const char* impl_name(Impl i);

struct Kernel {
  std::string name;        // "k3_conv": unique, a C identifier
  std::vector<int> nodes;  // graph node indices in execution order; the last one's output is the result
  Impl impl = Impl::kGenerated;
  Strategy strategy = Strategy::kElementwise;  // the code template (strategies.def)
  std::map<Knob, int64_t> knobs;               // template parameters that are set (knobs.def)

  int64_t knob(Knob key, int64_t fallback) const {
    auto it = knobs.find(key);
    return it == knobs.end() ? fallback : it->second;
  }
  int root() const { return nodes.back(); }
};

struct Schedule {
  std::vector<Kernel> kernels;       // in execution order
  std::string precision = "fp32";    // contractions: fp32 (exact), tf32, 3xtf32
  double tolerance = 1e-4;           // the verification tolerance (atol = rtol) the schedule must keep
  bool cuda_graph = false;           // capture the whole forward into one CUDA graph
  std::vector<std::string> applied;  // the skills applied to reach this schedule, in order (for people)
};

// Every node in exactly one kernel, kernels in an order that respects data dependencies.
Status check_schedule(const ir::Graph& g, const Schedule& s);

OrderedJson schedule_to_json(const ir::Graph& g, const Schedule& s);

// What identifies the program a schedule builds: the hash of its JSON without `applied` (the skills
// that led there, kept for people, never read by code generation), keys sorted. Two states reached by
// different skills with the same kernels build the same program and are measured once (the agent's
// evaluation caches and logs, the measurement database). program_hash_of_json takes a schedule's JSON
// as written (a recorded one included) and gives what program_hash gives for that schedule.
std::string program_hash(const ir::Graph& g, const Schedule& s);
std::string program_hash_of_json(Json schedule_json);
StatusOr<Schedule> schedule_from_json(const ir::Graph& g, const Json& j, const std::string& what);

}  // namespace kforge::schedule
