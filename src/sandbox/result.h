// The one measured-result type that flows back from evaluation (DESIGN.md), with its closed
// outcome enum. Rewards, filters, reports and training read only this.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"

namespace kforge::sandbox {

enum class Outcome { kOk, kCompileError, kWrongAnswer, kRuntimeFault, kTimeout, kResourceExhausted, kForbidden };

const char* outcome_name(Outcome o);  // "ok", "compile_error", ...
std::optional<Outcome> outcome_from_name(const std::string& name);

struct EvalResult {
  Outcome outcome = Outcome::kOk;
  std::optional<double> max_abs_err;  // over all verified input sets
  std::optional<double> max_rel_err;
  std::optional<double> t_candidate;  // seconds (median when measured)
  std::optional<double> t_eager;
  std::optional<double> t_compile;
  // torch.compile with torch.set_float32_matmul_precision("high") (TF32 matmuls, as our tf32 skill):
  // the precision-matched column, so gains from precision show apart from gains from kernels.
  std::optional<double> t_compile_tf32;
  std::optional<double> t_candidate_repeat;  // the candidate timed a second time in the same run (noise)
  std::optional<double> t_eager_repeat;      // eager timed a second time (noise of the reference)
  std::optional<double> t_candidate_wall;    // host time to a full device synchronize (escaped work)
  // Baselines beyond eager, compile and compile_tf32 (compile_max_autotune, ...: sandbox/baselines.def),
  // by name, in seconds; and the compile time of every compiled baseline, kept out of its timing.
  std::map<std::string, double> t_baselines;
  std::map<std::string, double> compile_seconds;
  std::string timing_method;  // timing_methods.def ("events", ...); empty when not timed
  bool fresh_inputs = false;  // every timed call on a different input set
  // What a reader should doubt: a tolerance too loose for an output's scale (zeros or an input would
  // also pass), a time under the roofline floor of the problem's own inputs and outputs.
  std::vector<std::string> warnings;
  // How the program's calls ran while timed (kforge_cuda_graph_stats of a kforge library: eager calls,
  // graph captures and replays); null for code that is not a kforge program library.
  OrderedJson cuda_graph;
  int other_streams = 0;      // CUDA streams the candidate made or switched to while timed (harness's watch)
  int samples = 0;            // timed trials per variant (0 when predicted)
  std::string protocol;       // "cuda-agent" or "kernelbench"
  std::string device;         // "NVIDIA H200" or "cpu (roofline of NVIDIA H200)"
  std::string torch_version;  // of the process that measured (empty when predicted)
  bool predicted = true;      // times come from the cost model, correctness is unverified
  std::string message;        // the compiler's or the harness's words on a failure
};

OrderedJson result_to_json(const EvalResult& r);

// Timing integrity, from a profiled result: the noise band (largest relative difference between two
// timings of the same model in the run), whether the speed-up over eager lies inside it, and whether
// the candidate's work escaped the timed stream: its event time under half its synchronized host time,
// with at least 0.2 ms unaccounted for, or the harness saw it make or switch to another CUDA stream
// while it ran (work there need not finish inside the timed window, whatever the times say).
struct TimingFlags {
  std::optional<double> noise;
  bool within_noise = false;
  bool escaped_stream = false;
};
TimingFlags timing_flags(const EvalResult& r);

// The CUDA Agent paper's milestone reward (Eq. 1): -1 if the candidate is not correct; 3 if it is
// more than 5 % faster than both eager and torch.compile; 2 if more than 5 % faster than eager;
// else 1. A correct candidate without measured times earns 1. Predicted results (no GPU) have no
// reward: correctness was never established.
std::optional<int> milestone_reward(const EvalResult& r);
// The same formula on whatever times `r` holds, predicted or not (the cost model's agent rewards, which
// are labelled predicted where they are used).
int milestone_reward_of_times(const EvalResult& r);

}  // namespace kforge::sandbox
