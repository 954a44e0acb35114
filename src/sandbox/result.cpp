// Outcome names and the JSON form of an evaluation result.
#include "sandbox/result.h"

namespace kforge::sandbox {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kCompileError: return "compile_error";
    case Outcome::kWrongAnswer: return "wrong_answer";
    case Outcome::kRuntimeFault: return "runtime_fault";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kResourceExhausted: return "resource_exhausted";
    case Outcome::kForbidden: return "forbidden";
  }
  return "?";
}

OrderedJson result_to_json(const EvalResult& r) {
  auto opt = [](const std::optional<double>& v) { return v ? OrderedJson(*v) : OrderedJson(nullptr); };
  OrderedJson j;
  j["outcome"] = outcome_name(r.outcome);
  j["max_abs_err"] = opt(r.max_abs_err);
  j["max_rel_err"] = opt(r.max_rel_err);
  j["t_candidate"] = opt(r.t_candidate);
  j["t_eager"] = opt(r.t_eager);
  j["t_compile"] = opt(r.t_compile);
  j["samples"] = r.samples;
  j["protocol"] = r.protocol;
  j["device"] = r.device;
  j["predicted"] = r.predicted;
  j["verified"] = !r.predicted && r.outcome != Outcome::kCompileError;
  if (!r.message.empty()) j["message"] = r.message;
  return j;
}

}  // namespace kforge::sandbox
