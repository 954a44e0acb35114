// Task sets for the agent: synthesized datasets (kforge synth's index.jsonl + tasks/), KernelBench
// suites (level*/N_*.py) or single problem files, imported once through the Python importer and cached
// as graph JSON (keyed by the file's content hash) so that training does not pay Python per episode.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/env.h"
#include "base/status.h"

namespace kforge::agent {

struct TaskLoadOptions {
  std::string protocol = "cuda-agent";
  std::string cache_dir;  // empty: $KFORGE_CACHE/graphs (or the build cache's default)
  int limit = 0;          // at most this many tasks (0: all), taken in the set's stable order
  std::function<void(int done, int total)> progress;  // long loads show progress
};

struct TaskSet {
  std::vector<Task> tasks;
  std::vector<std::string> skipped;  // "path: why" for each file that did not import
};

// `paths`: dataset directories, suite directories or .py files, in any mix. A path that does not
// exist, or a directory with no problem files, is a user error.
StatusOr<TaskSet> load_tasks(const std::vector<std::string>& paths, const TaskLoadOptions& options);

// A deterministic split by a hash of the task name: about `held_out_fraction` of the tasks (at least
// one when there are two or more) go to `held_out`, the rest to `train`; same names, same split.
void split_tasks(const std::vector<Task>& all, double held_out_fraction, std::vector<Task>* train,
                 std::vector<Task>* held_out);

}  // namespace kforge::agent
