// kforge env and kforge serve: the agent's environment as one stateless command (replay an episode's
// actions, answer the observation as JSON) and the HTTP service (issue #24) that drives it.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kforge::cli {

struct EnvArgs {
  std::string problem;         // a KernelBench-format problem file
  std::string actions;         // comma-separated action ids, one per turn, from the first observation on
  std::string device = "cpu";  // cpu (cost model, predicted), cuda (GPU harness, measured) or auto
  std::string protocol = "cuda-agent";
  std::string out;  // where GPU candidates are built (default: $KFORGE_CACHE/env)
  int max_turns = 150;
  int trials = 30;
  bool evaluate_each = false;  // every turn evaluated (step); default: turns before the last are edits
  bool last_edit = false;      // the last turn is an edit too (nothing evaluated but the first schedule)
  std::string record;          // evaluation log: programs in it are answered from it, new ones appended
};
// Registers `kforge env`; returns the subcommand.
CLI::App* add_env_subcommand(CLI::App& app, EnvArgs& a);
int run_env(const EnvArgs& a);

struct ServeArgs {
  std::vector<std::string> rest;  // passed to `python -m kforge.service` as they are
};
CLI::App* add_serve_subcommand(CLI::App& app, ServeArgs& a);
// Replaces this process with the project's python running kforge.service (the HTTP API and the Ray pool).
int run_serve(const ServeArgs& a);

}  // namespace kforge::cli
