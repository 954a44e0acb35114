// kforge agent: a language model in a ReAct loop over a kernel workspace (python/kforge/llm_agent, issue #23);
// and the skill tools it calls: `kforge skills sites` and `kforge skills apply`.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kforge::cli {

// Everything after `kforge agent` goes to `python -m kforge.llm_agent` unchanged (its --help lists it).
struct AgentArgs {
  std::vector<std::string> rest;
};
CLI::App* add_agent_subcommand(CLI::App& app, AgentArgs& a);
// Replaces this process with sandbox::python_executable() running kforge.llm_agent; returns only on failure.
int run_agent(const AgentArgs& a);

struct SkillSitesArgs {
  std::string input;     // problem .py or graph .json
  std::string schedule;  // a schedule .json (default: the first schedule, one kernel per op)
  std::string protocol = "cuda-agent";
  std::string skill;  // apply: the skill's name
  int site = -1;      // apply: the index into that skill's sites
  std::string out;    // apply: the new schedule (default: stdout); sites: also write the schedule here
};
// `kforge skills sites`: every legal site of every skill on the schedule, as JSON.
// `kforge skills apply`: the schedule with one site applied.
void add_skill_site_subcommands(CLI::App* skills_cmd, SkillSitesArgs& a, CLI::App** sites, CLI::App** apply);
int run_skill_sites(const SkillSitesArgs& a);
int run_skill_apply(const SkillSitesArgs& a);

}  // namespace kforge::cli
