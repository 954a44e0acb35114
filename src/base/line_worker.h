// A long-lived child process spoken to in lines: one request line in, one answer line out. The
// child runs in its own process group; a hang past the deadline or a death ends it (the whole group
// is killed) and the next request starts a fresh one. The harness and synth workers are built on it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kforge {

struct LineWorkerSpec {
  std::vector<std::string> argv;     // argv[0] searched on PATH
  std::vector<std::string> env;      // "NAME=value" added to the environment
  std::filesystem::path stderr_log;  // the child's stderr goes here (truncated at each start)
  std::function<void()> in_child;    // run in the child after fork, before exec (async-signal-safe)
};

class LineWorker {
 public:
  LineWorker() = default;
  ~LineWorker();
  LineWorker(const LineWorker&) = delete;
  LineWorker& operator=(const LineWorker&) = delete;

  struct Reply {
    enum Kind { kAnswer, kTimeout, kDied } kind = kDied;
    std::string line;      // kAnswer: the answer, without its newline
    int wait_status = -1;  // kDied: the child's waitpid status, -1 if it could not be read
  };

  Status start(const LineWorkerSpec& spec);
  bool running() const { return pid_ > 0; }
  // Writes the request line; waits for an answer until `timeout_seconds` have passed (then kills
  // the child: kTimeout), or the child closes its end (kDied). A child that died after its last
  // answer is started afresh for this request (if `restart` holds the spec to start it with).
  Reply ask(const std::string& request_line, double timeout_seconds, const LineWorkerSpec* restart);
  void stop();  // kills the process group, reaps the child
  std::string stderr_tail(size_t max_bytes = 1500) const;
  int starts() const { return starts_; }

 private:
  pid_t pid_ = -1;   // the child until reaped
  pid_t pgid_ = -1;  // its process group, killed whole on stop
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_;  // bytes read past the last complete line
  std::filesystem::path stderr_log_;
  int starts_ = 0;
};

// "was killed by signal 11" / "exited with status 3" from a waitpid status; `wrapped`: the child
// is bubblewrap, which reports its child's death by signal N as exit status 128 + N.
std::string describe_wait_status(int wait_status, bool wrapped);

}  // namespace kforge
