// kforge agent (exec of python -m kforge.llm_agent) and the skill tools it offers the model.
#include "cli/agent_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "base/files.h"
#include "base/json.h"
#include "base/subprocess.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/stages.h"
#include "sandbox/toolchain.h"
#include "schedule/planner.h"
#include "schedule/schedule.h"
#include "skills/skill.h"

namespace kforge::cli {

namespace fs = std::filesystem;

CLI::App* add_agent_subcommand(CLI::App& app, AgentArgs& a) {
  auto* cmd = app.add_subcommand(
      "agent",
      "a language model writes and tunes the kernels in a CUDA-Agent workspace, over an OpenAI-compatible server "
      "(`kforge agent --help` lists the options of python -m kforge.llm_agent; docs/agent-llm.md)");
  cmd->prefix_command();
  cmd->set_help_flag();  // --help goes to the Python side
  cmd->final_callback([&a, cmd] { a.rest = cmd->remaining(); });
  return cmd;
}

int run_agent(const AgentArgs& a) {
  auto home = kforge_home();
  if (!home.is_ok()) return report_error(home.status(), "agent");
  std::string pythonpath = (home.value() / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  setenv("PYTHONPATH", pythonpath.c_str(), 1);
  setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  std::error_code ec;
  // The loop's tools call kforge back (evaluate, plan, build, export, skills): this very binary.
  if (!std::getenv("KFORGE_BIN")) setenv("KFORGE_BIN", fs::read_symlink("/proc/self/exe", ec).c_str(), 1);
  const std::string python = sandbox::python_executable();
  std::vector<std::string> argv = {python, "-m", "kforge.llm_agent"};
  argv.insert(argv.end(), a.rest.begin(), a.rest.end());
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  std::fflush(stdout);
  execvp(python.c_str(), cargv.data());
  return report_error(external_error("cannot run " + python + " (set KFORGE_PYTHON to a python3 with torch)"), "agent");
}

Status write_cuda_agent_workspace(const KernelbenchFile& file, const std::string& dir, const std::string& protocol,
                                  bool force) {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path staged = fs::path(dir).parent_path().empty()
                              ? fs::path(".kforge-export-model_new.py")
                              : fs::path(dir).parent_path() / ".kforge-export-model_new.py";
  KF_RETURN_IF_ERROR(write_file(staged, file.text));
  std::vector<std::string> argv = {sandbox::python_executable(),
                                   "-m",
                                   "kforge.llm_agent",
                                   "workspace",
                                   fs::absolute(file.problem_path).string(),
                                   "--out",
                                   dir,
                                   "--model-new",
                                   staged.string(),
                                   "--protocol",
                                   protocol};
  if (force) argv.push_back("--force");
  auto r = run_process(argv, {.timeout_seconds = 120,
                              .extra_env = {"PYTHONPATH=" + (home / "python").string(), "PYTHONDONTWRITEBYTECODE=1",
                                            "KFORGE_BIN=" + fs::read_symlink("/proc/self/exe", ec).string()}});
  fs::remove(staged, ec);
  if (!r.is_ok()) return r.status();
  if (!r->ok()) return external_error("writing the workspace failed (" + shell_join(argv) + "): " + r->output);
  return Status::ok();
}

void add_skill_site_subcommands(CLI::App* skills_cmd, SkillSitesArgs& a, CLI::App** sites, CLI::App** apply) {
  *sites = skills_cmd->add_subcommand("sites", "every legal site of every skill on a schedule, as JSON");
  *apply = skills_cmd->add_subcommand("apply", "apply one site of one skill to a schedule");
  for (CLI::App* c : {*sites, *apply}) {
    c->add_option("input", a.input, "problem (.py) or graph (.json)")->required();
    c->add_option("--schedule", a.schedule,
                  "a schedule .json, or `first` (one kernel per op, the agent environment's first schedule); default: "
                  "kforge's plan, as `kforge plan` makes it");
    add_protocol_option(c, a.protocol);
  }
  (*apply)->add_option("--skill", a.skill, "the skill's name (kforge skills --names)")->required();
  (*apply)->add_option("--site", a.site, "the site's index in `kforge skills sites` for that skill")->required();
  (*apply)->add_option("-o,--out", a.out, "write the new schedule here (default: stdout)");
  (*sites)->add_option("--write-schedule", a.out, "also write the schedule the sites are of here (e.g. `first`'s)");
}

namespace {

struct Loaded {
  ir::Graph graph;
  schedule::Schedule sched;
};

StatusOr<Loaded> load(const SkillSitesArgs& a) {
  KF_ASSIGN_OR_RETURN(Protocol protocol, protocol_from_name(a.protocol));
  CommonOptions common;
  common.protocol = a.protocol;
  Loaded l;
  KF_ASSIGN_OR_RETURN(l.graph, load_graph_or_problem(a.input, protocol.mode));
  if (a.schedule == "first") {
    // The environment's first schedule (agent/env.h): one kernel per op, fp32, at the protocol's tolerance.
    l.sched = schedule::plan_one_kernel_per_op(l.graph, {.precision = "fp32", .tolerance = protocol.atol});
    return l;
  }
  KF_ASSIGN_OR_RETURN(l.sched, load_or_plan_schedule(l.graph, a.schedule, plan_options(common)));
  return l;
}

}  // namespace

int run_skill_sites(const SkillSitesArgs& a) {
  auto l = load(a);
  if (!l.is_ok()) return report_error(l.status(), "skills sites");
  OrderedJson out = OrderedJson::array();
  for (const auto& sk : skills::all_skills()) {
    const auto sites = sk.sites(l->graph, l->sched);
    for (size_t i = 0; i < sites.size(); ++i) {
      OrderedJson o;
      o["skill"] = std::string(sk.name);
      o["site"] = i;
      o["what"] = sites[i].what;
      o["kernels"] = sites[i].kernels;
      out.push_back(o);
    }
  }
  if (!a.out.empty()) {
    auto st = write_file(a.out, schedule::schedule_to_json(l->graph, l->sched).dump(1) + "\n");
    if (!st.is_ok()) return report_error(st, "skills sites");
  }
  std::cout << out.dump(1) << "\n";
  return kExitOk;
}

int run_skill_apply(const SkillSitesArgs& a) {
  auto l = load(a);
  if (!l.is_ok()) return report_error(l.status(), "skills apply");
  for (const auto& sk : skills::all_skills()) {
    if (sk.name != a.skill) continue;
    const auto sites = sk.sites(l->graph, l->sched);
    if (a.site < 0 || static_cast<size_t>(a.site) >= sites.size())
      return report_error(
          invalid_argument(a.skill + " has " + std::to_string(sites.size()) + " sites on this schedule; --site " +
                           std::to_string(a.site) + " is not one of them (kforge skills sites lists them)"),
          "skills apply");
    auto s = sk.apply(l->graph, l->sched, sites[static_cast<size_t>(a.site)]);
    if (!s.is_ok()) return report_error(s.status(), "skills apply");
    auto st = write_or_print(a.out, schedule::schedule_to_json(l->graph, s.value()).dump(1) + "\n");
    if (!st.is_ok()) return report_error(st, "skills apply");
    return kExitOk;
  }
  return report_error(invalid_argument("no skill named " + a.skill + " (kforge skills --names lists them)"),
                      "skills apply");
}

}  // namespace kforge::cli
