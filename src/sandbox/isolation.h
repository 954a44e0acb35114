// Isolation of the harness worker (untrusted candidate code runs in it): bubblewrap where it works
// (no network, the whole tree read-only, a private writable scratch as TMPDIR and HOME, a private PID
// namespace, killed with its parent) and a cgroup with memory and process caps where cgroups are
// writable. Where either is missing, kforge says so instead of pretending.
//
// torch.compile's caches (Inductor, Triton): nothing writable is shared between sandboxes. A worker's
// own compiles go to its scratch. The baselines' precompiled artifacts live in a per-run folder
// (baseline_cache_dir) that only a baselines worker, which never runs candidate code, may write; every
// other worker sees it read-only and gives each candidate a private copy of its problem's part.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace kforge::sandbox {

struct IsolationOptions {
  std::string mode;               // "auto" (default: $KFORGE_SANDBOX or auto), "bwrap" or "none"
  std::filesystem::path scratch;  // the worker's private writable directory (TMPDIR, HOME)
  // The per-run folder of the baselines' precompiled torch.compile artifacts (may be empty): bound
  // read-only, or writable when `baselines_writer` (a worker that runs the reference only).
  std::filesystem::path baseline_cache;
  bool baselines_writer = false;
  int64_t memory_bytes = 64LL << 30;  // host memory cap of the worker (GPU memory is not counted here)
  int64_t max_tasks = 8192;           // processes and threads of the worker
};

struct Isolation {
  std::vector<std::string> argv_prefix;  // bubblewrap and its arguments; empty without bubblewrap
  std::vector<std::string> env;          // NAME=value the worker gets (TMPDIR, HOME, cache dirs)
  std::string cgroup_procs;              // the cgroup's procs file the child joins; empty without a cgroup
  std::string cgroup_dir;                // removed when the worker is gone
  std::string description;               // "bubblewrap (no network, read-only tree, private tmp); cgroup v1: ..."
};

// This run's baseline cache folder (made on first use, under the temporary directory; removed when
// the process exits).
std::filesystem::path baseline_cache_dir();

// The bubblewrap command line (without the worker's own argv) for these options.
std::vector<std::string> bwrap_arguments(const std::string& bwrap, const IsolationOptions& options);

// NAME=value the worker gets: TMPDIR, HOME, its private torch.compile caches, KFORGE_BASELINE_CACHE.
std::vector<std::string> isolation_env(const IsolationOptions& options);

// Plans the worker's isolation and creates its scratch directory and cgroup. mode "bwrap" fails
// when bubblewrap is missing or does not work here; "auto" falls back and says so.
StatusOr<Isolation> prepare_isolation(const IsolationOptions& options);

// Removes what prepare_isolation made (the cgroup, the scratch directory).
void release_isolation(const Isolation& isolation, const std::filesystem::path& scratch);

// In the forked child, before exec: joins the cgroup (async-signal-safe).
void join_cgroup_in_child(const Isolation& isolation);

}  // namespace kforge::sandbox
