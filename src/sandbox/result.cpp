// Outcome names and the JSON form of an evaluation result.
#include "sandbox/result.h"

#include <algorithm>
#include <cmath>

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

std::optional<Outcome> outcome_from_name(const std::string& name) {
  for (Outcome o : {Outcome::kOk, Outcome::kCompileError, Outcome::kWrongAnswer, Outcome::kRuntimeFault,
                    Outcome::kTimeout, Outcome::kResourceExhausted, Outcome::kForbidden}) {
    if (name == outcome_name(o)) return o;
  }
  return std::nullopt;
}

std::optional<int> milestone_reward(const EvalResult& r) {
  if (r.outcome != Outcome::kOk) return -1;
  if (r.predicted) return std::nullopt;
  return milestone_reward_of_times(r);
}

int milestone_reward_of_times(const EvalResult& r) {
  if (r.outcome != Outcome::kOk) return -1;
  if (!r.t_candidate || !r.t_eager) return 1;
  const double t = *r.t_candidate;
  const bool beats_eager = t < 0.95 * *r.t_eager;
  const bool beats_compile = r.t_compile && t < 0.95 * *r.t_compile;
  if (beats_eager && beats_compile) return 3;
  if (beats_eager) return 2;
  return 1;
}

TimingFlags timing_flags(const EvalResult& r) {
  TimingFlags f;
  auto rel = [](const std::optional<double>& a, const std::optional<double>& b) -> std::optional<double> {
    if (!a || !b || *a <= 0) return std::nullopt;
    return std::abs(*b - *a) / *a;
  };
  for (auto d : {rel(r.t_candidate, r.t_candidate_repeat), rel(r.t_eager, r.t_eager_repeat)}) {
    if (d) f.noise = std::max(f.noise.value_or(0.0), *d);
  }
  if (f.noise && r.t_candidate && r.t_eager)
    f.within_noise = std::abs(*r.t_eager - *r.t_candidate) / *r.t_eager <= *f.noise;
  if (r.t_candidate && r.t_candidate_wall)
    f.escaped_stream = *r.t_candidate<0.5 * *r.t_candidate_wall&& * r.t_candidate_wall - *r.t_candidate> 2e-4;
  if (r.t_candidate && r.other_streams > 0) f.escaped_stream = true;
  return f;
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
  if (r.t_compile_tf32) j["t_compile_tf32"] = *r.t_compile_tf32;
  if (r.t_candidate_repeat) j["t_candidate_repeat"] = *r.t_candidate_repeat;
  if (r.t_eager_repeat) j["t_eager_repeat"] = *r.t_eager_repeat;
  if (r.t_candidate_wall) j["t_candidate_wall"] = *r.t_candidate_wall;
  for (const auto& [name, t] : r.t_baselines) j["t_" + name] = t;
  if (!r.compile_seconds.empty()) j["compile_seconds"] = r.compile_seconds;
  if (!r.timing_method.empty()) j["timing"] = r.timing_method;
  if (r.fresh_inputs) j["fresh_inputs"] = true;
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  if (r.other_streams > 0) j["other_streams"] = r.other_streams;
  if (!r.cuda_graph.is_null()) j["cuda_graph"] = r.cuda_graph;
  if (r.t_candidate) {
    TimingFlags f = timing_flags(r);
    if (f.noise) j["noise"] = *f.noise;
    j["within_noise"] = f.within_noise;
    j["escaped_stream"] = f.escaped_stream;
  }
  j["samples"] = r.samples;
  j["protocol"] = r.protocol;
  j["device"] = r.device;
  if (!r.torch_version.empty()) j["torch"] = r.torch_version;
  j["predicted"] = r.predicted;
  j["verified"] = !r.predicted && r.outcome != Outcome::kCompileError;
  auto reward = milestone_reward(r);
  j["reward"] = reward ? OrderedJson(*reward) : OrderedJson(nullptr);
  if (!r.message.empty()) j["message"] = r.message;
  return j;
}

}  // namespace kforge::sandbox
