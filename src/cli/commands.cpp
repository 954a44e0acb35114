// The subcommands: thin drivers over the pipeline stages, printing tables or JSON.
#include "cli/commands.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "base/files.h"
#include "base/table.h"
#include "cli/pipeline.h"
#include "schedule/planner.h"

namespace kforge::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

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

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Status write_or_print(const std::string& out, const std::string& text) {
  if (out.empty() || out == "-") {
    std::cout << text;
    return Status::ok();
  }
  return write_file(out, text);
}

bool gpu_present() {
  std::error_code ec;
  return fs::exists("/dev/nvidia0", ec) || fs::exists("/dev/nvidiactl", ec);
}

std::string reference_source_of(const ir::Graph& g) {
  auto text = read_file(g.source);
  return text.is_ok() ? text.value() : std::string();
}

}  // namespace

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
  schedule::Schedule s = schedule::plan_one_kernel_per_op(g.value(), {.precision = a.precision});
  if (auto st = schedule::check_schedule(g.value(), s); !st.is_ok()) return report_error(st, "plan");
  auto st = write_or_print(a.out, schedule::schedule_to_json(g.value(), s).dump(1) + "\n");
  if (!st.is_ok()) return report_error(st, "plan");
  return kExitOk;
}

namespace {

struct Turn {
  ir::Graph graph;
  schedule::Schedule sched;
  BuiltProgram built;
  OrderedJson stages;
};

StatusOr<Turn> import_plan_build(const std::string& input, const std::string& schedule_path, const Protocol& protocol,
                                 const fs::path& out_dir, bool force, int jobs) {
  Turn t;
  auto t0 = Clock::now();
  KF_ASSIGN_OR_RETURN(t.graph, load_graph_or_problem(input, protocol.mode));
  t.stages["import"] = since(t0);
  auto t1 = Clock::now();
  if (schedule_path.empty()) {
    t.sched = schedule::plan_one_kernel_per_op(t.graph);
  } else {
    KF_ASSIGN_OR_RETURN(std::string text, read_file(schedule_path));
    KF_ASSIGN_OR_RETURN(Json j, parse_json(text, schedule_path));
    KF_ASSIGN_OR_RETURN(t.sched, schedule::schedule_from_json(t.graph, j, schedule_path));
  }
  t.stages["plan"] = since(t1);
  KF_RETURN_IF_ERROR(prepare_out_dir(out_dir, force));
  KF_RETURN_IF_ERROR(write_file(out_dir / "graph.json", ir::graph_to_json(t.graph).dump(1) + "\n"));
  KF_RETURN_IF_ERROR(
      write_file(out_dir / "schedule.json", schedule::schedule_to_json(t.graph, t.sched).dump(1) + "\n"));
  auto t2 = Clock::now();
  KF_ASSIGN_OR_RETURN(t.built, build_into(t.graph, t.sched, reference_source_of(t.graph), out_dir, jobs));
  t.stages["codegen_and_build"] = since(t2);
  return t;
}

int finish(const Turn& t, const Protocol& protocol, const std::string& device, const fs::path& out_dir, bool json,
           const char* command) {
  OrderedJson report = report_json(t.graph, t.sched, t.built, protocol, device, t.stages);
  report["out_dir"] = fs::absolute(out_dir).string();
  if (auto s = write_file(out_dir / "report.json", report.dump(2) + "\n"); !s.is_ok()) return report_error(s, command);
  if (!t.built.build.ok) {
    std::string log;
    for (const auto& c : t.built.build.compiles) {
      if (!c.ok) log += "==> " + c.file + "\n" + c.log + "\n";
    }
    (void)write_file(out_dir / "build.log", log);
  }
  if (json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << report_table(t.graph, t.sched, t.built, protocol, device, command) << "wrote " << out_dir.string()
              << "/ (model_new.py, kernels/, " << library_file_name(t.graph.name) << ", report.json)\n";
  }
  return t.built.build.ok ? kExitOk : kExitFailedResult;
}

}  // namespace

int run_build(const BuildArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "build");
  fs::path out = a.out_dir.empty() ? fs::path("out") / fs::path(a.input).stem() : fs::path(a.out_dir);
  auto t = import_plan_build(a.input, a.schedule, protocol.value(), out, a.force, a.common.jobs);
  if (!t.is_ok()) return report_error(t.status(), "build");
  return finish(t.value(), protocol.value(), "cpu", out, a.common.json, "build");
}

int run_optimize(const OptimizeArgs& a) {
  auto protocol = protocol_from_name(a.common.protocol);
  if (!protocol.is_ok()) return report_error(protocol.status(), "optimize");
  if (a.device != "auto" && a.device != "cpu" && a.device != "cuda") {
    return report_error(invalid_argument("--device must be auto, cpu or cuda, not '" + a.device + "'"), "optimize");
  }
  if (a.device == "cuda") {
    return report_error(
        unsupported("--device cuda: GPU evaluation (verify and profile on the GPU) is not part of this build yet; "
                    "use --device cpu for predicted timings"),
        "optimize");
  }
  std::string device = "cpu";
  if (a.device == "auto" && gpu_present()) {
    std::fprintf(
        stderr,
        "kforge optimize: a GPU is present, but GPU evaluation is not part of this build yet; timings are predicted\n");
  }
  fs::path out = a.out_dir.empty() ? fs::path("out") / fs::path(a.problem).stem() : fs::path(a.out_dir);
  auto t = import_plan_build(a.problem, "", protocol.value(), out, a.force, a.common.jobs);
  if (!t.is_ok()) return report_error(t.status(), "optimize");
  return finish(t.value(), protocol.value(), device, out, a.common.json, "optimize");
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
