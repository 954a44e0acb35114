// Runs a child process with a time limit and captures its output; failures come back as data.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace kforge {

struct ProcessResult {
  int exit_code = -1;      // the child's exit status, or -1 if it was killed or did not start
  int signal = 0;          // the signal that killed it, 0 if none
  bool timed_out = false;  // killed because it ran past the limit
  std::string output;      // stdout and stderr, interleaved
  double seconds = 0.0;    // wall time
  bool ok() const { return exit_code == 0 && !timed_out; }
};

struct ProcessOptions {
  std::filesystem::path working_dir;  // empty: inherit
  double timeout_seconds = 600.0;
  std::vector<std::string> extra_env;  // "NAME=value" entries added to the environment
  std::string stdin_data;              // written to the child's stdin, then closed
};

// Starts argv[0] (searched on PATH) and waits. A child that cannot start is reported in the result
// (exit_code 127 and a message), not as a Status; Status is for failures of our own (no pipes).
StatusOr<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Quotes argv for a shell, for messages and logs.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace kforge
