// What `kforge synth` keeps of one candidate task: where it came from, every filter stage's result,
// and (when accepted) its file. One JSON line each in the journal, candidates.jsonl and index.jsonl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::synth {

// The filter stages, in the order a candidate meets them.
enum class Stage {
  kCompose,          // the seed library found shape-compatible arguments
  kSpineImport,      // kforge.importer traces it and the C++ IR re-infers every shape
  kEager,            // KernelBench's loader accepts it; it runs in eager mode (scaled-down batch)
  kCompile,          // ... and under torch.compile (torch 2.x; skipped on torch 1.x)
  kDeterministic,    // no stochastic operators
  kDistinguishable,  // outputs finite, not constant, distinguishable across input sets
  kRuntimeWindow,    // predicted eager time on the H200 within 1-100 ms at a batch that fits memory
  kContamination,    // AST similarity to every benchmark problem at most 0.9
};
inline constexpr Stage kStages[] = {Stage::kCompose,       Stage::kSpineImport,   Stage::kEager,
                                    Stage::kCompile,       Stage::kDeterministic, Stage::kDistinguishable,
                                    Stage::kRuntimeWindow, Stage::kContamination};
const char* stage_name(Stage s);
const char* stage_description(Stage s);

struct CandidateRecord {
  int64_t candidate = 0;   // its index in the run: task seeds derive from (run seed, index)
  uint64_t task_seed = 0;  // the seed of every draw that made it
  bool accepted = false;
  std::string rejected_at;                      // the failing stage's name ("" when accepted)
  OrderedJson filters = OrderedJson::object();  // stage name -> {"result": pass|fail|skipped, "message", values}

  std::vector<std::string> ops;  // library classes, in order
  std::string data_source;       // "torch#2"
  std::string title;             // "Conv2d_ReLU"
  std::vector<std::string> registry_ops;
  int64_t batch_size = 0;
  double predicted_eager_ms = 0;  // 0 when not sized
  std::string nearest;            // the most similar benchmark problem ("" without --against)
  double similarity = 0;
  std::string file;  // "tasks/000042_Conv2d_ReLU.py" (accepted only)
  std::string code;  // the task's source (accepted only)

  // Records a stage's result; a failure also sets rejected_at.
  void pass(Stage s, OrderedJson detail = OrderedJson::object());
  void fail(Stage s, const std::string& message, OrderedJson detail = OrderedJson::object());
  void skip(Stage s, const std::string& message);
};

// x rounded to `digits` significant digits (numbers in the dataset's JSON stay short and stable).
double round_significant(double x, int digits = 4);

// The journal's form: everything, code included.
OrderedJson record_to_json(const CandidateRecord& r);
StatusOr<CandidateRecord> record_from_json(const OrderedJson& j);

// index.jsonl's form: CUDA-Agent-Ops-6K's columns (ops, data_source, code) first, then provenance.
OrderedJson index_entry(const CandidateRecord& r, uint64_t run_seed);

}  // namespace kforge::synth
