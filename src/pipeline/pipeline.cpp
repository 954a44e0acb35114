// Stage helpers shared by the commands: loading, output directories, building, reports.
#include "pipeline/pipeline.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "agent/evaluator_factory.h"
#include "agent/policy.h"
#include "base/files.h"
#include "base/table.h"
#ifdef KFORGE_HAVE_RL
#include "rl/learned_policy.h"
#endif
#include "sandbox/python.h"
#include "sandbox/result.h"

namespace kforge::pipeline {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOutMarker = ".kforge-out";

}  // namespace

std::string measured_summary(const sandbox::EvalResult& r) {
  std::ostringstream os;
  os << "\nmeasured on " << r.device << " (torch " << r.torch_version << "): " << sandbox::outcome_name(r.outcome);
  if (r.max_abs_err) os << ", max abs err " << *r.max_abs_err;
  os << "\n";
  if (r.t_candidate) {
    Table t({"variant", "median", "speed-up"});
    t.add_row({"candidate", format_seconds(*r.t_candidate), "1.00x"});
    auto ratio = [&](double x) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", x / *r.t_candidate);
      return std::string(buf);
    };
    if (r.t_eager) t.add_row({"eager", format_seconds(*r.t_eager), ratio(*r.t_eager)});
    if (r.t_compile) t.add_row({"torch.compile", format_seconds(*r.t_compile), ratio(*r.t_compile)});
    if (r.t_compile_tf32)
      t.add_row({"torch.compile (TF32)", format_seconds(*r.t_compile_tf32), ratio(*r.t_compile_tf32)});
    for (const auto& [name, tb] : r.t_baselines) t.add_row({name, format_seconds(tb), ratio(tb)});
    os << t.render();
    if (r.timing_method == "do_bench") {
      os << "(triton.testing.do_bench medians";
    } else if (r.timing_method == "wall") {
      os << "(" << r.samples << " interleaved trials each, host wall clock to a device synchronize, L2 flushed";
    } else {
      os << "(" << r.samples << " interleaved trials each, CUDA events, L2 flushed";
    }
    os << (r.fresh_inputs ? ", fresh inputs every call" : "") << "; speed-up = variant / candidate)\n";
    for (const auto& [name, secs] : r.compile_seconds) os << "compile time of " << name << ": " << secs << " s\n";
  }
  for (const auto& w : r.warnings) os << "warning: " << w << "\n";
  if (auto reward = sandbox::milestone_reward(r)) os << "reward " << *reward << "\n";
  if (!r.message.empty() && r.outcome != sandbox::Outcome::kOk) os << r.message << "\n";
  return os.str();
}

StatusOr<Protocol> protocol_from_name(const std::string& name) {
  return sandbox::protocol_named(name);
}

StatusOr<ir::Graph> load_graph_or_problem(const std::string& path, const std::string& mode) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("no such file: " + path);
  if (fs::path(path).extension() == ".json") return ir::load_graph(path);
  if (fs::path(path).extension() != ".py") {
    return invalid_argument(path + " is neither a problem (.py) nor a graph (.json)");
  }
  KF_ASSIGN_OR_RETURN(Json j, sandbox::run_importer(path, {.mode = mode}));
  return ir::graph_from_json(j, path);
}

Status prepare_out_dir(const fs::path& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      return invalid_argument(dir.string() + " exists and is not a directory; pick another --out");
    bool empty = fs::directory_iterator(dir, ec) == fs::directory_iterator();
    if (!empty && !fs::exists(dir / kOutMarker, ec) && !force) {
      return invalid_argument(
          dir.string() +
          " already holds files that kforge did not write; pick another --out, or pass --force to write into it");
    }
  }
  fs::create_directories(dir, ec);
  if (ec) return external_error("cannot create " + dir.string() + ": " + ec.message());
  return write_file(dir / kOutMarker, "This directory is written by kforge; its files are regenerated on each run.\n");
}

StatusOr<BuiltProgram> build_into(const ir::Graph& g, const schedule::Schedule& s, const std::string& reference_source,
                                  const fs::path& out_dir, int jobs) {
  KF_ASSIGN_OR_RETURN(sandbox::BuiltCandidate c, sandbox::build_candidate(g, s, reference_source, out_dir, jobs));
  BuiltProgram b;
  b.program = std::move(c.program);
  b.build = std::move(c.build);
  b.cost = costmodel::program_cost(g, s);
  return b;
}

std::string reference_source_of(const ir::Graph& g) {
  auto text = read_file(g.source);
  return text.is_ok() ? text.value() : std::string();
}

StatusOr<schedule::Schedule> load_or_plan_schedule(const ir::Graph& g, const std::string& path,
                                                   const skills::DefaultPlanOptions& plan) {
  if (path.empty()) return skills::plan_default(g, plan);
  KF_ASSIGN_OR_RETURN(std::string text, read_file(path));
  KF_ASSIGN_OR_RETURN(Json j, parse_json(text, path));
  return schedule::schedule_from_json(g, j, path);
}

namespace {

StatusOr<std::unique_ptr<agent::Policy>> policy_named(const std::string& name) {
  if (name == "heuristic") return agent::make_heuristic_policy();
  if (name == "search") return agent::make_search_policy();
  if (name == "random") return agent::make_random_policy();
  return invalid_argument("unknown policy '" + name + "': use learned, heuristic, search or random");
}

// The checkpoint the learned policy loads: --checkpoint, else the one kforge ships (policies/), which
// the default (empty) policy takes where kforge has libtorch and the file is there; "" for the others.
StatusOr<std::string> learned_checkpoint(const AgentOptions& options) {
  if (!options.checkpoint.empty()) {
#ifdef KFORGE_HAVE_RL
    return options.checkpoint;
#else
    return unsupported("--checkpoint needs the learned policy, and this kforge was built without libtorch");
#endif
  }
  if (!options.policy.empty() && options.policy != "learned") return std::string();
#ifdef KFORGE_HAVE_RL
  auto home = kforge_home();
  const fs::path shipped = home.is_ok() ? home.value() / kShippedPolicy : fs::path(kShippedPolicy);
  if (home.is_ok() && fs::exists(shipped)) return shipped.string();
  if (options.policy.empty()) return std::string();
  return not_found("no shipped learned policy at " + shipped.string() +
                   ": give a `kforge train` checkpoint with --checkpoint, or --policy heuristic");
#else
  if (options.policy.empty()) return std::string();
  return unsupported("--policy learned needs libtorch, and this kforge was built without it: use --policy heuristic");
#endif
}

}  // namespace

StatusOr<AgentPlan> plan_with_agent(const ir::Graph& g, const Protocol& protocol, const AgentOptions& options,
                                    const skills::DefaultPlanOptions& plan) {
  std::unique_ptr<agent::Policy> policy;
  KF_ASSIGN_OR_RETURN(const std::string checkpoint, learned_checkpoint(options));
  if (!checkpoint.empty()) {
#ifdef KFORGE_HAVE_RL
    std::string other_action_space;  // a checkpoint of the same shapes made with another catalogue: said, then used
    KF_ASSIGN_OR_RETURN(policy, rl::make_learned_policy(checkpoint, &other_action_space));
    if (!other_action_space.empty()) std::fprintf(stderr, "kforge: warning: %s\n", other_action_space.c_str());
#endif
  } else {
    KF_ASSIGN_OR_RETURN(policy, policy_named(options.policy.empty() ? "heuristic" : options.policy));
  }
  if (options.turns < 1) return invalid_argument("--turns must be at least 1");
  // Planned, a correction serves the plan (the cost model); on the GPU the measurements need none.
  const bool correction_plans_only = options.planned && options.device == "cuda";
  if (options.planned) {
    KF_ASSIGN_OR_RETURN(std::shared_ptr<agent::Evaluator> planner,
                        agent::make_evaluator("cpu", {}, options.correction));
    policy = agent::make_planned_policy(std::move(policy), std::move(planner), /*refine=*/true);
  }
  agent::Task task;
  task.name = g.name;
  task.source = g.source;
  task.graph = g;
  task.protocol = protocol.name;
  KF_ASSIGN_OR_RETURN(
      std::shared_ptr<agent::Evaluator> evaluator,
      agent::make_evaluator(options.device,
                            {.work_dir = options.work_dir, .trials = options.trials, .jobs = options.jobs},
                            correction_plans_only ? std::string() : options.correction));
  agent::Environment env(evaluator, {.max_turns = options.turns, .disabled_skills = plan.disabled});
  KF_ASSIGN_OR_RETURN(agent::Episode ep, agent::run_episode(env, *policy, task, /*seed=*/0));
  AgentPlan out;
  out.sched = ep.best;
  OrderedJson& r = out.report;
  r["policy"] = ep.policy;
  if (!checkpoint.empty()) r["checkpoint"] = checkpoint;
  r["evaluator"] = evaluator->name();
  r["predicted"] = ep.predicted;
  r["times"] = ep.predicted ? "predicted on CPU by the roofline cost model (NVIDIA H200 ceilings), not measured"
                            : "measured on the GPU by the harness (each candidate built, verified and timed)";
  r["turns"] = ep.turns;
  r["max_turns"] = options.turns;
  r["evaluations"] = ep.evaluations;
  if (const auto* gpu = dynamic_cast<const agent::HarnessEvaluator*>(evaluator.get())) {
    r["candidates_built"] = gpu->builds();
    r["harness_requests"] = gpu->harness_requests();
    r["candidates_dir"] = fs::absolute(gpu->candidate_dir(task, ep.best).parent_path()).string();
  }
  r["reward"] = ep.reward;
  r["seed"] = 0;
  OrderedJson actions = OrderedJson::array();
  for (const auto& tr : ep.transitions) actions.push_back(tr.action_name);
  r["actions"] = actions;
  return out;
}

std::string agent_summary(const OrderedJson& report) {
  std::ostringstream os;
  os << "agent: " << report["policy"].get<std::string>() << " policy"
     << (report.contains("checkpoint") ? " (" + report["checkpoint"].get<std::string>() + ")" : std::string()) << ", "
     << report["turns"].get<int>() << " turns, " << report["evaluations"].get<int>() << " evaluations by the "
     << report["evaluator"].get<std::string>() << "; " << (report["predicted"].get<bool>() ? "predicted " : "")
     << "reward " << report["reward"].get<double>() << ", times " << report["times"].get<std::string>() << "\n";
  if (report.contains("candidates_built")) {
    os << "agent: " << report["candidates_built"].get<int>() << " candidates built, "
       << report["harness_requests"].get<int>() << " harness requests, in "
       << report["candidates_dir"].get<std::string>() << "\n";
  }
  return os.str();
}

StatusOr<Turn> import_plan_build(const std::string& input, const Protocol& protocol, const fs::path& out_dir,
                                 const TurnOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  Turn t;
  auto t0 = Clock::now();
  KF_ASSIGN_OR_RETURN(t.graph, load_graph_or_problem(input, protocol.mode));
  t.stages["import"] = since(t0);
  // A policy that cannot be had (no shipped checkpoint, no libtorch) fails before the output exists.
  if (options.agent && options.schedule_path.empty()) KF_RETURN_IF_ERROR(learned_checkpoint(*options.agent).status());
  KF_RETURN_IF_ERROR(prepare_out_dir(out_dir, options.force));
  auto t1 = Clock::now();
  if (options.agent && options.schedule_path.empty()) {
    AgentOptions agent = *options.agent;
    if (agent.work_dir.empty()) agent.work_dir = out_dir / "agent";
    KF_ASSIGN_OR_RETURN(AgentPlan planned, plan_with_agent(t.graph, protocol, agent, options.plan));
    t.sched = std::move(planned.sched);
    t.agent = std::move(planned.report);
  } else {
    KF_ASSIGN_OR_RETURN(t.sched, load_or_plan_schedule(t.graph, options.schedule_path, options.plan));
  }
  t.stages["plan"] = since(t1);
  KF_RETURN_IF_ERROR(write_file(out_dir / "graph.json", ir::graph_to_json(t.graph).dump(1) + "\n"));
  KF_RETURN_IF_ERROR(
      write_file(out_dir / "schedule.json", schedule::schedule_to_json(t.graph, t.sched).dump(1) + "\n"));
  auto t2 = Clock::now();
  KF_ASSIGN_OR_RETURN(t.built, build_into(t.graph, t.sched, reference_source_of(t.graph), out_dir, options.jobs));
  t.stages["codegen_and_build"] = since(t2);
  return t;
}

std::vector<FallbackPlan> fallback_plans(const skills::DefaultPlanOptions& plan) {
  FallbackPlan exact{"exact-fp32", plan};
  exact.plan.base.precision = "fp32";
  exact.plan.base.tolerance = 1e-12;  // positive (check_schedule), far below what any precision skill needs
  FallbackPlan none{"no-skills", exact.plan};
  for (const auto& skill : skills::all_skills()) none.plan.disabled.insert(std::string(skill.name));
  return {exact, none};
}

bool falls_back(sandbox::Outcome o) {
  return o == sandbox::Outcome::kWrongAnswer || o == sandbox::Outcome::kRuntimeFault;
}

Json written_schedule(const fs::path& dir) {
  auto text = read_file(dir / "schedule.json");
  if (!text.is_ok()) return nullptr;
  auto j = parse_json(text.value(), (dir / "schedule.json").string());
  return j.is_ok() ? j.value() : Json(nullptr);
}

std::string attempts_summary(const OrderedJson& attempts) {
  std::ostringstream os;
  for (const auto& a : attempts) {
    os << "attempt " << a.value("plan", "?") << ": " << a.value("outcome", "?");
    if (a.contains("max_abs_err") && a["max_abs_err"].is_number())
      os << " (max abs err " << a["max_abs_err"].get<double>() << ")";
    os << ", precision " << a.value("precision", "?") << ", " << a["skills_applied"].size() << " skills applied\n";
  }
  return os.str();
}

bool same_program(const Json& a, const Json& b) {
  if (!a.is_object() || !b.is_object()) return false;
  for (const char* key : {"precision", "cuda_graph", "kernels"}) {
    if (a.value(key, Json()) != b.value(key, Json())) return false;
  }
  return true;
}

OrderedJson attempt_json(const std::string& plan, const sandbox::EvalResult& r, const Json& schedule,
                         const fs::path& dir) {
  OrderedJson j;
  j["plan"] = plan;
  j["outcome"] = sandbox::outcome_name(r.outcome);
  j["max_abs_err"] = r.max_abs_err ? OrderedJson(*r.max_abs_err) : OrderedJson(nullptr);
  j["max_rel_err"] = r.max_rel_err ? OrderedJson(*r.max_rel_err) : OrderedJson(nullptr);
  j["precision"] = schedule.is_object() ? schedule.value("precision", "") : "";
  j["skills_applied"] = schedule.is_object() && schedule.contains("applied") ? schedule["applied"] : Json::array();
  j["dir"] = dir.string();
  if (!r.message.empty() && r.outcome != sandbox::Outcome::kOk) j["message"] = r.message.substr(0, 1000);
  return j;
}

sandbox::EvalResult predicted_result(const BuiltProgram& b, const Protocol& p) {
  sandbox::EvalResult res;
  res.protocol = p.name;
  res.device = "cpu (roofline of NVIDIA H200)";
  res.predicted = true;
  res.outcome = b.build.ok                       ? sandbox::Outcome::kOk
                : b.build.outcome == "forbidden" ? sandbox::Outcome::kForbidden
                                                 : sandbox::Outcome::kCompileError;
  if (b.build.ok) res.t_candidate = b.cost.seconds;
  res.message = b.build.message;
  return res;
}

OrderedJson report_json(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                        const sandbox::EvalResult& result, const Json& stages) {
  OrderedJson r;
  r["format"] = "kforge.report/1";
  r["problem"] = g.source;
  r["name"] = g.name;
  r["protocol"] = p.name;
  r["mode"] = g.mode;
  r["device"] = result.device;
  r["torch_version"] = result.torch_version.empty() ? g.torch_version : result.torch_version;
  r["result"] = sandbox::result_to_json(result);
  r["predicted_floor_seconds"] = b.cost.floor_seconds;
  r["build"] = {{"ok", b.build.ok},
                {"outcome", b.build.outcome},
                {"seconds", b.build.seconds},
                {"files", b.build.compiles.size()},
                {"cache_hits", b.build.cache_hits},
                {"units_compiled", b.build.units_compiled},
                {"nvcc_seconds", b.build.nvcc_seconds},
                {"link_seconds", b.build.link_seconds},
                {"library", b.build.library.filename().string()}};
  r["precision"] = s.precision;
  r["skills_applied"] = s.applied;
  r["kernels"] = OrderedJson::array();
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const auto& k = s.kernels[i];
    OrderedJson jk;
    jk["name"] = k.name;
    jk["impl"] = schedule::impl_name(k.impl);
    jk["strategy"] = schedule::strategy_name(k.strategy);
    OrderedJson ops = OrderedJson::array();
    for (int n : k.nodes) ops.push_back(ir::op_info(g.nodes()[static_cast<size_t>(n)].op).name);
    jk["ops"] = ops;
    jk["predicted_seconds"] = b.cost.kernels[i].seconds;
    jk["flops"] = b.cost.kernels[i].flops;
    jk["bytes"] = b.cost.kernels[i].bytes;
    jk["bound"] = b.cost.kernels[i].bound;
    for (const auto& c : b.build.compiles) {
      if (c.file != k.name + ".cu") continue;
      OrderedJson res_list = OrderedJson::array();
      for (const auto& ru : c.resources) {
        res_list.push_back({{"function", ru.kernel},
                            {"registers", ru.registers},
                            {"spill_stores", ru.spill_stores},
                            {"spill_loads", ru.spill_loads},
                            {"shared_bytes", ru.shared_bytes}});
      }
      jk["resources"] = res_list;
    }
    r["kernels"].push_back(jk);
  }
  r["stages_seconds"] = stages;
  return r;
}

std::string report_table(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                         const sandbox::EvalResult& result, const std::string& command) {
  std::ostringstream os;
  os << "kforge " << command << " " << g.name << "  (protocol " << p.name << ", " << g.mode << " mode, device "
     << result.device << ")\n";
  if (result.predicted) {
    os << "No GPU evaluation: times below are PREDICTED by the roofline cost model (H200 ceilings), "
          "and correctness is NOT verified.\n";
  }
  os << "\n";
  Table t({"kernel", "ops", "impl", "strategy", "predicted", "bound", "regs", "spills"});
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const auto& k = s.kernels[i];
    std::string ops;
    for (int n : k.nodes) ops += (ops.empty() ? "" : "+") + ir::op_info(g.nodes()[static_cast<size_t>(n)].op).name;
    std::string regs = "-";
    std::string spills = "-";
    for (const auto& c : b.build.compiles) {
      if (c.file != k.name + ".cu" || c.resources.empty()) continue;
      int r = 0;
      int sp = 0;
      for (const auto& ru : c.resources) {
        r = std::max(r, ru.registers);
        sp += ru.spill_stores + ru.spill_loads;
      }
      regs = std::to_string(r);
      spills = std::to_string(sp);
    }
    t.add_row({k.name, ops, schedule::impl_name(k.impl), std::string(schedule::strategy_name(k.strategy)),
               format_seconds(b.cost.kernels[i].seconds), b.cost.kernels[i].bound, regs, spills});
  }
  t.add_rule();
  t.add_row(
      {"total", "", "", "", format_seconds(b.cost.seconds), "floor " + format_seconds(b.cost.floor_seconds), "", ""});
  os << t.render() << "\n";
  os << "precision " << s.precision << " (tolerance " << s.tolerance << "); skills applied: ";
  if (s.applied.empty()) os << "none";
  if (s.applied.size() <= 20) {
    for (size_t i = 0; i < s.applied.size(); ++i) os << (i ? "; " : "") << s.applied[i];
  } else {
    // A whole network applies a skill thousands of times: counts per skill (schedule.json lists each).
    std::map<std::string, size_t> per_skill;
    for (const auto& a : s.applied) ++per_skill[a.substr(0, a.find(':'))];
    os << s.applied.size() << " applications (";
    bool first = true;
    for (const auto& [skill, n] : per_skill) {
      os << (first ? "" : ", ") << skill << " x" << n;
      first = false;
    }
    os << "; schedule.json lists each)";
  }
  os << "\n";
  int cached = b.build.cache_hits;
  os << "build: " << b.build.outcome << " (" << b.build.compiles.size() << " files, " << cached << " from cache) in "
     << format_seconds(b.build.seconds) << "\n";
  if (!b.build.ok) os << b.build.message << "\n";
  if (!result.predicted) os << measured_summary(result);
  return os.str();
}

}  // namespace kforge::pipeline
