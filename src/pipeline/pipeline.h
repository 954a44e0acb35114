// The stages of one turn, as the commands use them: import -> plan -> codegen -> build -> predict.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "ir/graph.h"
#include "sandbox/build.h"
#include "sandbox/candidate.h"
#include "sandbox/protocol.h"
#include "sandbox/result.h"
#include "schedule/schedule.h"
#include "skills/planner.h"

namespace kforge::pipeline {

// The protocols of DESIGN.md; the protocol fixes the module mode the graph is traced in.
using Protocol = sandbox::Protocol;  // the registry: sandbox/protocols.def
StatusOr<Protocol> protocol_from_name(const std::string& name);

// A graph from a problem .py (through the importer) or a graph .json.
StatusOr<ir::Graph> load_graph_or_problem(const std::string& path, const std::string& mode);

// Refuses to write into a directory that holds files kforge did not make, unless `force`.
Status prepare_out_dir(const std::filesystem::path& dir, bool force);

struct BuiltProgram {
  codegen::Program program;
  sandbox::BuildResult build;
  costmodel::ProgramCost cost;
};

// Codegen + build into out_dir; writes model_new.py, program.json and the library there.
StatusOr<BuiltProgram> build_into(const ir::Graph& g, const schedule::Schedule& s, const std::string& reference_source,
                                  const std::filesystem::path& out_dir, int jobs);

// The schedule in `path` (a `kforge plan` JSON), or the default planner's when `path` is empty.
StatusOr<schedule::Schedule> load_or_plan_schedule(const ir::Graph& g, const std::string& path,
                                                   const skills::DefaultPlanOptions& plan);

// The agent that plans in place of the default planner (issue #5): a policy over the skills' sites,
// judged by the evaluator of `device` (agent/evaluator_factory.h): on the CPU the cost model, whose
// times are predictions; on a GPU the harness, which builds, verifies and times every candidate.
// The learned policy kforge ships, relative to its home (policies/README.md says how it was trained).
inline constexpr const char* kShippedPolicy = "policies/learned-ci.pt";

struct AgentOptions {
  std::string policy;              // learned, heuristic, search or random; empty: learned where shipped, else heuristic
  int turns = 200;                 // at most this many turns (the paper's 200 at evaluation)
  std::string checkpoint;          // a `kforge train` checkpoint: the learned policy, in place of `policy`
  std::string device = "cpu";      // cpu (cost model) or cuda (GPU harness); auto picks
  int trials = 30;                 // timed trials per variant of each GPU evaluation
  std::filesystem::path work_dir;  // where the GPU evaluator builds candidates (import_plan_build: out/agent)
  int jobs = 0;                    // nvcc jobs of each GPU build
  std::string correction;          // a `kforge costmodel fit --out` file for the cost model (cpu only)
  // agent::make_planned_policy (refined) on the cost model: the device judges from the plan's end on
  bool planned = false;
};

// The policy's episode on `g`: its best schedule, and what it did (policy, turns, evaluations, ...).
struct AgentPlan {
  schedule::Schedule sched;
  OrderedJson report;
};
StatusOr<AgentPlan> plan_with_agent(const ir::Graph& g, const Protocol& protocol, const AgentOptions& agent,
                                    const skills::DefaultPlanOptions& plan);
// One line for people: "agent: heuristic policy, 3 turns, 4 evaluations (times predicted on CPU ...)".
std::string agent_summary(const OrderedJson& report);

// One pass of the pipeline: import (or load) -> plan (or load the schedule) -> codegen -> build,
// writing graph.json, schedule.json and the built program into out_dir.
struct Turn {
  ir::Graph graph;
  schedule::Schedule sched;
  BuiltProgram built;
  OrderedJson stages;  // seconds per stage
  OrderedJson agent;   // the agent's report when it planned (null: the default planner or a given schedule)
  OrderedJson attempts = OrderedJson::array();  // the iterate step's candidates (attempt_json), when it ran
};
struct TurnOptions {
  std::string schedule_path;  // replay this schedule instead of planning
  skills::DefaultPlanOptions plan;
  std::optional<AgentOptions> agent;  // plan with this policy instead of the default planner
  bool force = false;                 // write into a directory kforge did not make
  int jobs = 0;                       // nvcc jobs
};
StatusOr<Turn> import_plan_build(const std::string& input, const Protocol& protocol,
                                 const std::filesystem::path& out_dir, const TurnOptions& options);

// The iterate step (issue #21): the plans tried, in order, after a candidate gave a wrong answer or
// faulted on the GPU. First the same skills with exact fp32 numerics (tolerance 1e-12: no skill may spend
// any of it, so every TF32 and other-engine skill stays out), then one kernel per op with no skill at
// all. A wrong answer is never the final result while a safer plan gives a correct one.
struct FallbackPlan {
  std::string name;  // "exact-fp32", "no-skills": also the candidate's folder beside the first one
  skills::DefaultPlanOptions plan;
};
std::vector<FallbackPlan> fallback_plans(const skills::DefaultPlanOptions& plan);
// The outcomes that send a candidate down the fallback plans: a wrong answer, a runtime fault.
bool falls_back(sandbox::Outcome o);
// One attempt as report.json and bench.json record it: plan name, outcome, errors, and the precision
// and skills of its schedule (`schedule` as schedule.json holds it), folder.
OrderedJson attempt_json(const std::string& plan, const sandbox::EvalResult& r, const Json& schedule,
                         const std::filesystem::path& dir);
// Lines for people: one per attempt ("" when there were none).
std::string attempts_summary(const OrderedJson& attempts);
// The schedule.json a build wrote into dir (null when unreadable).
Json written_schedule(const std::filesystem::path& dir);
// Whether two schedule.json contents build the same program (precision, kernels; not the tolerance
// or the applied list).
bool same_program(const Json& a, const Json& b);

// The result a build earns without a GPU: compile_error, or ok with the cost model's time, predicted.
sandbox::EvalResult predicted_result(const BuiltProgram& b, const Protocol& p);

// The report of one optimize/build run (report.json), and its table for people.
OrderedJson report_json(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                        const sandbox::EvalResult& result, const Json& stages);
std::string report_table(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                         const sandbox::EvalResult& result, const std::string& command);

// Lines for people about a GPU evaluation: outcome, error, times against eager and torch.compile, reward.
std::string measured_summary(const sandbox::EvalResult& r);

// The problem's source text, read from where the graph was traced (empty if unreadable).
std::string reference_source_of(const ir::Graph& g);

using ::kforge::sandbox::library_file_name;  // sandbox/candidate.h

}  // namespace kforge::pipeline
