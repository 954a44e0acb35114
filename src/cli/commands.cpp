// The subcommands: thin drivers over the pipeline stages, printing tables or JSON.
#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "base/files.h"
#include "base/table.h"
#include "cli/bundle.h"
#include "cli/evaluate.h"
#include "cli/html_report.h"
#include "cli/stages.h"
#include "codegen/export_kernelbench.h"
#include "sandbox/python.h"
#include "sandbox/static_check.h"
#include "skills/planner.h"

namespace kforge::cli {

namespace fs = std::filesystem;

std::set<std::string> split_list(const std::string& s) {
  std::set<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.insert(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

int report_error(const Status& s, const char* command) {
  std::fprintf(stderr, "kforge %s: error: %s\n", command, s.message().c_str());
  switch (s.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kUnsupported: return kExitUserError;
    case ErrorCode::kExternal: return kExitEnvironment;
    default: return kExitInternal;
  }
}

Status write_or_print(const std::string& out, const std::string& text) {
  if (out.empty() || out == "-") {
    std::cout << text;
    return Status::ok();
  }
  return write_file(out, text);
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

skills::DefaultPlanOptions plan_options(const CommonOptions& c, const std::string& precision) {
  skills::DefaultPlanOptions o;
  o.base.precision = precision.empty() ? "fp32" : precision;
  if (!precision.empty()) o.disabled.insert({"tf32_contractions", "split_tf32_contractions"});
  auto protocol = protocol_from_name(c.protocol);
  if (protocol.is_ok()) o.base.tolerance = std::min(protocol->atol, protocol->rtol);
  o.disabled.insert(c.disabled_skills.begin(), c.disabled_skills.end());
  return o;
}

int run_import(const ImportArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "import");
  auto g = load_graph_or_problem(a.problem, protocol->mode);
  if (!g.is_ok()) return report_error(g.status(), "import");
  auto s = write_or_print(a.out, ir::graph_to_json(g.value()).dump(1) + "\n");
  if (!s.is_ok()) return report_error(s, "import");
  if (!a.out.empty())
    std::fprintf(stderr, "wrote %s: %zu nodes, %zu inputs, %zu params\n", a.out.c_str(), g->nodes().size(),
                 g->inputs().size(), g->params().size());
  return kExitOk;
}

int run_plan(const PlanArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "plan");
  auto g = load_graph_or_problem(a.input, protocol->mode);
  if (!g.is_ok()) return report_error(g.status(), "plan");
  auto s = skills::plan_default(g.value(), plan_options(a.common, a.precision));
  if (!s.is_ok()) return report_error(s.status(), "plan");
  auto st = write_or_print(a.out, schedule::schedule_to_json(g.value(), s.value()).dump(1) + "\n");
  if (!st.is_ok()) return report_error(st, "plan");
  return kExitOk;
}

namespace {

int finish(const Turn& t, const Protocol& protocol, const sandbox::EvalResult& result, const fs::path& out_dir,
           bool json, const char* command) {
  OrderedJson report = report_json(t.graph, t.sched, t.built, protocol, result, t.stages);
  if (!t.agent.is_null()) report["agent"] = t.agent;
  if (!t.attempts.empty()) report["attempts"] = t.attempts;
  report["out_dir"] = fs::absolute(out_dir).string();
  if (auto s = write_file(out_dir / "report.json", report.dump(2) + "\n"); !s.is_ok()) return report_error(s, command);
  (void)write_file(out_dir / "build.log", build_log_text(t.built.build));
  if (std::string(command) == "optimize") write_html_report(out_dir / "report.json", out_dir / "report.html", command);
  if (json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << report_table(t.graph, t.sched, t.built, protocol, result, command)
              << (t.agent.is_null() ? "" : agent_summary(t.agent)) << attempts_summary(t.attempts) << "wrote "
              << out_dir.string() << "/ (model_new.py, kernels/, " << library_file_name(t.graph.name)
              << ", report.json)\n";
  }
  return result.outcome == sandbox::Outcome::kOk ? kExitOk : kExitFailedResult;
}

}  // namespace

int run_build(const BuildArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "build");
  fs::path out = a.out_dir.empty() ? fs::path("out") / fs::path(a.input).stem() : fs::path(a.out_dir);
  auto t = import_plan_build(
      a.input, protocol.value(), out,
      {.schedule_path = a.schedule, .plan = plan_options(a.common), .force = a.force, .jobs = a.common.jobs});
  if (!t.is_ok()) return report_error(t.status(), "build");
  return finish(t.value(), protocol.value(), predicted_result(t->built, protocol.value()), out, a.common.json, "build");
}

int run_optimize(const OptimizeArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "optimize");
  auto device = resolve_device(a.device);
  if (!device.is_ok()) return report_error(device.status(), "optimize");
  fs::path out = a.out_dir.empty() ? fs::path("out") / fs::path(a.problem).stem() : fs::path(a.out_dir);
  if (!a.bundle.empty()) {
    if (auto s = check_bundle_target(a.bundle, a.force); !s.is_ok()) return report_error(s, "optimize");
  }
  auto t = import_plan_build(a.problem, protocol.value(), out,
                             {.plan = plan_options(a.common),
                              .agent = AgentOptions{.policy = a.policy,
                                                    .turns = a.turns,
                                                    .checkpoint = a.checkpoint,
                                                    .device = device.value(),
                                                    .trials = a.trials,
                                                    .jobs = a.common.jobs,
                                                    .correction = a.correction,
                                                    .planned = a.planned},
                              .force = a.force,
                              .jobs = a.common.jobs});
  if (!t.is_ok()) return report_error(t.status(), "optimize");
  sandbox::EvalResult result = predicted_result(t->built, protocol.value());
  if (device.value() == "cuda" && t->built.build.ok) {
    std::fprintf(stderr, "kforge optimize: verifying and timing on the GPU (candidate, eager, torch.compile)...\n");
    auto t0 = Clock::now();
    sandbox::HarnessWorker worker;
    auto measured =
        evaluate_candidate(worker, a.problem, out, protocol.value(), a.common.timing, /*profile=*/true, a.trials);
    if (!measured.is_ok()) return report_error(measured.status(), "optimize");
    result = std::move(measured).value();
    t->stages["evaluate"] = since(t0);
    if (falls_back(result.outcome)) {
      // The iterate step: a wrong answer is feedback. Safer plans are built beside (out/attempts/<plan>) and
      // verified in order; the first correct one is rebuilt into out (from the build cache) as the result.
      OrderedJson attempts = OrderedJson::array();
      Json last = written_schedule(out);
      attempts.push_back(attempt_json("default", result, last, out));
      for (const auto& fb : fallback_plans(plan_options(a.common))) {
        const fs::path dir = out / "attempts" / fb.name;
        auto turn = import_plan_build(a.problem, protocol.value(), dir,
                                      {.plan = fb.plan, .force = true, .jobs = a.common.jobs});
        if (!turn.is_ok() || !turn->built.build.ok) continue;
        Json sched = written_schedule(dir);
        if (same_program(sched, last)) continue;
        last = sched;
        std::fprintf(stderr, "kforge optimize: %s; trying the %s plan...\n", sandbox::outcome_name(result.outcome),
                     fb.name.c_str());
        auto again =
            evaluate_candidate(worker, a.problem, dir, protocol.value(), a.common.timing, /*profile=*/true, a.trials);
        if (!again.is_ok()) return report_error(again.status(), "optimize");
        attempts.push_back(attempt_json(fb.name, again.value(), sched, dir));
        if (again->outcome != sandbox::Outcome::kOk) continue;
        auto final_turn = import_plan_build(a.problem, protocol.value(), out,
                                            {.plan = fb.plan, .force = true, .jobs = a.common.jobs});
        if (!final_turn.is_ok()) return report_error(final_turn.status(), "optimize");
        final_turn->stages = t->stages;
        final_turn->agent = t->agent;
        t = std::move(final_turn);
        result = std::move(again).value();
        break;
      }
      t->attempts = attempts;
    }
  }
  const int code = finish(t.value(), protocol.value(), result, out, a.common.json, "optimize");
  if (a.bundle.empty() || (code != kExitOk && code != kExitFailedResult)) return code;
  auto report = read_file(out / "report.json");
  auto record = report.is_ok() ? parse_json(report.value(), "report.json") : StatusOr<Json>(report.status());
  if (!record.is_ok()) return report_error(record.status(), "optimize");
  OrderedJson header;
  header["commit"] = kforge_commit();
  header["date"] = today_utc();
  header["device"] = result.predicted ? std::string("cpu (roofline of NVIDIA H200)") : result.device;
  header["torch"] = t->graph.torch_version;
  header["predicted"] = result.predicted;
  OrderedJson rec = OrderedJson::parse(record->dump());
  rec["outcome"] = sandbox::outcome_name(result.outcome);
  rec["predicted"] = result.predicted;
  auto n = write_bundle(a.bundle, {{"", fs::path(a.problem).stem().string(), a.problem, out, rec}},
                        {.command = "optimize", .header = header, .protocol = protocol.value(), .common = a.common});
  if (!n.is_ok()) return report_error(n.status(), "optimize");
  std::fprintf(stderr, "wrote the audit bundle %s\n", a.bundle.c_str());
  return code;
}

namespace {

// `kforge evaluate --static-only`: the checks the harness runs before it loads a candidate (and the CUDA
// rules on --cuda files), on any machine; the outcome is forbidden when any finds something.
int run_static_checks(const EvaluateArgs& a) {
  auto findings = sandbox::check_model_new(a.candidate, a.problem);
  if (!findings.is_ok()) return report_error(findings.status(), "evaluate");
  std::vector<sandbox::Finding> all = findings.value();
  for (const auto& f : a.cuda_files) {
    auto text = read_file(f);
    if (!text.is_ok()) return report_error(text.status(), "evaluate");
    for (auto& x : sandbox::check_cuda_source(text.value(), fs::path(f).filename().string())) all.push_back(x);
  }
  OrderedJson j;
  j["outcome"] = all.empty() ? "ok" : "forbidden";
  j["static_only"] = true;
  j["verified"] = false;
  OrderedJson list = OrderedJson::array();
  for (const auto& f : all) {
    OrderedJson o;
    o["rule"] = f.rule;
    o["file"] = f.file;
    o["line"] = f.line;
    o["message"] = f.message;
    list.push_back(o);
  }
  j["findings"] = list;
  j["reward"] = all.empty() ? OrderedJson(nullptr) : OrderedJson(-1);
  if (!all.empty()) j["message"] = sandbox::describe(all.front());
  if (a.common.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "static checks of " << a.candidate << ": " << (all.empty() ? "clean" : "forbidden") << "\n";
    for (const auto& f : all) std::cout << "  " << sandbox::describe(f) << " [" << f.rule << "]\n";
  }
  return all.empty() ? kExitOk : kExitFailedResult;
}

}  // namespace

int run_evaluate(const EvaluateArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "evaluate");
  std::error_code ec;
  for (const auto& f : {a.problem, a.candidate}) {
    if (!fs::is_regular_file(f, ec)) return report_error(not_found("no such file: " + f), "evaluate");
  }
  if (a.static_only) return run_static_checks(a);
  auto device = resolve_device("cuda");
  if (!device.is_ok()) return report_error(device.status(), "evaluate");
  sandbox::HarnessWorker worker;
  sandbox::EvalRequest req;
  req.problem = a.problem;
  req.candidate = a.candidate;
  req.protocol = protocol.value();
  req.timing = a.common.timing;
  req.profile = a.profile;
  req.trials = a.trials;
  req.timeout_seconds = a.timeout;
  req.static_check = a.static_check;
  auto r = worker.evaluate(req);
  if (!r.is_ok()) return report_error(r.status(), "evaluate");
  if (a.common.json) {
    OrderedJson j = sandbox::result_to_json(r.value());
    j["isolation"] = worker.isolation();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "kforge evaluate " << a.candidate << " against " << a.problem << " (protocol " << protocol->name
              << ")\nworker: " << worker.isolation() << "\n"
              << measured_summary(r.value());
  }
  return r->outcome == sandbox::Outcome::kOk ? kExitOk : kExitFailedResult;
}

StatusOr<KernelbenchFile> kernelbench_file(const std::string& input, const std::string& schedule,
                                           const Protocol& protocol, const CommonOptions& common,
                                           bool allow_library_only) {
  std::error_code ec;
  std::string graph_path = input;
  std::string schedule_path = schedule;
  if (fs::is_directory(input, ec)) {
    graph_path = (fs::path(input) / "graph.json").string();
    if (!fs::exists(graph_path, ec))
      return invalid_argument(input +
                              " has no graph.json: give an output directory of `kforge optimize` or `kforge "
                              "build`, a problem .py or a graph .json");
    if (schedule_path.empty() && fs::exists(fs::path(input) / "schedule.json", ec))
      schedule_path = (fs::path(input) / "schedule.json").string();
  }
  KF_ASSIGN_OR_RETURN(ir::Graph g, load_graph_or_problem(graph_path, protocol.mode));
  KF_ASSIGN_OR_RETURN(schedule::Schedule s, load_or_plan_schedule(g, schedule_path, plan_options(common)));
  KernelbenchFile file;
  std::string source = reference_source_of(g);
  if (source.empty())
    return not_found("cannot read the problem source " + g.source + " that the graph was traced from");
  codegen::KernelbenchExportOptions options{.allow_library_only = allow_library_only};
  if (auto broken = codegen::kernelbench_strict_rule_violations(source); !broken.empty()) {
    // Upstream's checker reads words like `pass` or `except` in docstrings and comments as code:
    // the file then holds the problem's source without them (same code, same behaviour).
    auto stripped = sandbox::problem_source_without_docstrings(g.source);
    if (stripped.is_ok() && codegen::kernelbench_strict_rule_violations(stripped.value()).empty()) {
      file.note = "the problem's source breaks a rule of upstream's checker (" + broken.front() +
                  "); the file holds it without its docstrings and comments";
      source = stripped.value();
      options.source_change = "docstrings and comments (upstream's checker read a word in them as code)";
    }
  }
  const codegen::ProgramOptions program_options{.library_file = "", .reference_source = source};
  KF_ASSIGN_OR_RETURN(codegen::Program program, codegen::emit_program(g, s, program_options));
  KF_ASSIGN_OR_RETURN(file.text, codegen::export_kernelbench(g, program, source, options));
  file.kernels = program.calls.size();
  file.problem_path = g.source;
  return file;
}

int run_export(const ExportArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "export");
  std::error_code ec;
  if (a.out != "-" && fs::exists(a.out, ec) && !a.force)
    return report_error(invalid_argument(a.out + " exists; pick another -o, or pass --force to overwrite it"),
                        "export");
  auto file = kernelbench_file(a.input, a.schedule, protocol.value(), a.common, a.allow_library_only);
  if (!file.is_ok()) return report_error(file.status(), "export");
  if (!file->note.empty()) std::fprintf(stderr, "kforge export: %s\n", file->note.c_str());
  if (a.format == "cuda-agent") {
    if (a.out == "-")
      return report_error(invalid_argument("--format cuda-agent writes a directory: give -o DIR"), "export");
    auto st = write_cuda_agent_workspace(file.value(), a.out, a.common.protocol, a.force);
    if (!st.is_ok()) return report_error(st, "export");
    std::fprintf(stderr, "wrote %s/ (SKILL.md, model.py, model_new.py with %zu kernels, kernels/, evaluator/)\n",
                 a.out.c_str(), file->kernels);
    return kExitOk;
  }
  auto st = write_or_print(a.out, file->text);
  if (!st.is_ok()) return report_error(st, "export");
  if (a.out != "-") std::fprintf(stderr, "wrote %s (%zu kernels inline)\n", a.out.c_str(), file->kernels);
  return kExitOk;
}

int run_skills(bool json, bool names_only) {
  const auto& skills = skills::all_skills();
  if (names_only) {
    for (const auto& sk : skills) std::cout << sk.name << "\n";
    return kExitOk;
  }
  if (json) {
    OrderedJson j = OrderedJson::array();
    for (const auto& sk : skills) {
      OrderedJson o;
      o["name"] = std::string(sk.name);
      o["summary"] = std::string(sk.summary);
      j.push_back(o);
    }
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  std::cout << "The skill catalogue, in the default planner's order (docs/skills.md has the details):\n";
  for (const auto& sk : skills) std::cout << "  " << sk.name << ": " << sk.summary << "\n";
  std::cout << skills.size() << " skills\n";
  return kExitOk;
}

int run_ops(bool json) {
  if (json) {
    OrderedJson j = OrderedJson::array();
    for (const auto& op : ir::all_ops()) {
      OrderedJson o;
      o["name"] = op.name;
      o["family"] = std::string(ir::family_name(op.family));
      OrderedJson ins = OrderedJson::array();
      for (const auto& in : op.inputs) ins.push_back(in.name + (in.optional ? "?" : in.variadic ? "*" : ""));
      o["inputs"] = ins;
      OrderedJson attrs = OrderedJson::object();
      for (const auto& at : op.attrs)
        attrs[at.name] = std::string(ir::attr_type_name(at.type)) + (at.nullable ? "?" : "");
      o["attrs"] = attrs;
      j.push_back(o);
    }
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  Table t({"op", "family", "inputs", "attrs"});
  for (const auto& op : ir::all_ops()) {
    std::string ins;
    for (const auto& in : op.inputs)
      ins += (ins.empty() ? "" : ", ") + in.name + (in.optional ? "?" : in.variadic ? "*" : "");
    std::string attrs;
    for (const auto& at : op.attrs) attrs += (attrs.empty() ? "" : ", ") + at.name;
    t.add_row({op.name, std::string(ir::family_name(op.family)), ins, attrs});
  }
  std::cout << t.render() << ir::all_ops().size() << " ops\n";
  return kExitOk;
}

}  // namespace kforge::cli
