// The one measured-result type that flows back from evaluation (DESIGN.md), with its closed
// outcome enum. Rewards, filters, reports and training read only this.
#pragma once

#include <optional>
#include <string>

#include "base/json.h"

namespace kforge::sandbox {

enum class Outcome { kOk, kCompileError, kWrongAnswer, kRuntimeFault, kTimeout, kResourceExhausted, kForbidden };

const char* outcome_name(Outcome o);  // "ok", "compile_error", ...

struct EvalResult {
  Outcome outcome = Outcome::kOk;
  std::optional<double> max_abs_err;  // over all verified input sets
  std::optional<double> max_rel_err;
  std::optional<double> t_candidate;  // seconds (median when measured)
  std::optional<double> t_eager;
  std::optional<double> t_compile;
  int samples = 0;        // timed trials per variant (0 when predicted)
  std::string protocol;   // "cuda-agent" or "kernelbench"
  std::string device;     // "NVIDIA H200" or "cpu (roofline of NVIDIA H200)"
  bool predicted = true;  // times come from the cost model, correctness is unverified
  std::string message;    // the compiler's or the harness's words on a failure
};

OrderedJson result_to_json(const EvalResult& r);

}  // namespace kforge::sandbox
