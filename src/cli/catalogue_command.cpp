// kforge catalogue (catalogue_command.h).
#include "cli/catalogue_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "agent/action_space.h"
#include "agent/evaluation_log.h"
#include "cli/commands.h"
#ifdef KFORGE_HAVE_RL
#include "rl/networks.h"
#endif

namespace kforge::cli {

CLI::App* add_catalogue_subcommand(CLI::App& app, CatalogueArgs& a) {
  auto* cmd = app.add_subcommand(
      "catalogue",
      "the version (fingerprint) of the skill catalogue and action space explore logs and policy checkpoints are "
      "made with; --check FILE... says whether they match this kforge's");
  cmd->add_option("--check", a.check, "policy checkpoints (.pt) and explore logs (.jsonl) to check");
  cmd->add_flag("--json", a.json, "print the version as JSON");
  return cmd;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "" when `path` was made with this kforge's action space, else what differs and how to make it again; an
// unreadable file is an error.
StatusOr<std::string> mismatch_of(const std::string& path) {
  if (ends_with(path, ".jsonl")) {
    KF_ASSIGN_OR_RETURN(agent::EvaluationLog log, agent::read_evaluation_logs({path}));
    Status st = agent::check_log_action_space(log, "explore log");
    return st.is_ok() ? std::string() : st.message();
  }
  if (ends_with(path, ".pt")) {
#ifdef KFORGE_HAVE_RL
    KF_ASSIGN_OR_RETURN(rl::ActorCritic net, rl::ActorCritic::load(path));
    Status st = rl::check_action_space(net, path);
    return st.is_ok() ? std::string() : st.message();
#else
    return unsupported(path + ": checking a checkpoint needs libtorch, and this kforge was built without it");
#endif
  }
  return unsupported(path + ": neither a checkpoint (.pt) nor an explore log (.jsonl)");
}

}  // namespace

int run_catalogue(const CatalogueArgs& a) {
  const auto& now = agent::current_action_space();
  if (a.json) {
    std::cout << agent::action_space_to_json(now).dump(2) << "\n";
  } else {
    std::cout << "action space " << agent::describe_action_space(now) << "\n";
  }
  int stale = 0;
  for (const auto& path : a.check) {
    auto mismatch = mismatch_of(path);
    if (!mismatch.is_ok()) return report_error(mismatch.status(), "catalogue");
    if (mismatch->empty()) {
      std::fprintf(stderr, "ok: %s\n", path.c_str());
    } else {
      std::fprintf(stderr, "stale: %s\n", mismatch->c_str());
      ++stale;
    }
  }
  return stale > 0 ? kExitFailedResult : kExitOk;
}

}  // namespace kforge::cli
