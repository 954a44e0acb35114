// kforge explore: every schedule the skills reach from each problem's first schedule, evaluated and
// recorded (issue #5's GPU criterion). On the GPU each state is built, verified and timed; the log
// (agent/evaluation_log.h) then lets `kforge train --eval-tasks ... --replay LOG` compare the policies,
// exhaustive search included, on those measurements on any machine.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kforge::cli {

struct ExploreArgs {
  std::vector<std::string> tasks;  // suite directories or problem files
  std::string record;              // the evaluation log (JSON lines), appended
  std::string device = "auto";     // auto, cpu (cost model) or cuda (GPU harness)
  std::string protocol = "cuda-agent";
  std::string only;         // comma-separated problem names (file stems)
  std::string out;          // where candidates are built (default: <record>.candidates)
  int max_states = 256;     // per task; a task with more is recorded as capped
  int trials = 10;          // timed trials per variant on the GPU
  int jobs = 0;             // parallel builds before measuring (0: every core)
  double time_limit = 0;    // seconds: no new task starts after this (0: none)
  std::string db;           // also record every measured candidate in this measurement database
  std::string json_out;     // the per-task summary as JSON
  bool no_compile = false;  // time the candidate and eager only (torch.compile costs seconds per state)
  bool eager_once = false;  // time eager once per problem and reuse it for the problem's other states
  bool resume = false;      // keep the log; skip the tasks it has finished
  bool force = false;       // start the log again
  // Logs of an earlier exploration (another catalogue, another commit): a problem whose every reachable
  // program today is in them, finished there, is copied from them instead of explored again.
  std::vector<std::string> reuse;
  bool dry_run = false;  // with reuse: say which problems would be explored, write nothing
};

CLI::App* add_explore_subcommand(CLI::App& app, ExploreArgs& a);
int run_explore(const ExploreArgs& a);

}  // namespace kforge::cli
