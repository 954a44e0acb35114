// The audit bundle (`kforge bench --bundle`, `kforge optimize --bundle`): one tar.gz that a reader can
// rebuild and re-run with upstream KernelBench's evaluator. Per problem: the problem file, kforge's
// ModelNew and CUDA sources, the schedule and graph, the build log, the record, and the program
// exported as one upstream-loadable ModelNew file; at the top a manifest, a README and the script
// that runs upstream's `eval_kernel_against_ref` on every export (python/kforge/upstream_eval.py).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "cli/commands.h"
#include "sandbox/build.h"
#include "sandbox/protocol.h"

namespace kforge::cli {

struct BundleProblem {
  std::string level;              // the level folder ("level1"), or "" for a single problem
  std::string name;               // the problem's file stem
  std::filesystem::path problem;  // the problem file
  std::filesystem::path out_dir;  // its candidate's folder (model_new.py, kernels/, schedule.json, ...)
  OrderedJson record;             // its record (bench.json's entry, or optimize's report.json)
};

struct BundleRun {
  std::string command;  // "bench" or "optimize"
  OrderedJson header;   // commit, date, device, torch, predicted, suite, ... (copied into the manifest)
  sandbox::Protocol protocol;
  CommonOptions common;  // the timing, and the options the exports are planned with
};

// The commit of the kforge tree ($KFORGE_COMMIT, set by scripts that run on copies, else git; "+dirty"
// when tracked files changed), and today's date (UTC, YYYY-MM-DD): what every record names.
std::string kforge_commit();
std::string today_utc();

// build.log: every nvcc unit with its outcome and nvcc's output (errors, warnings, resource usage).
std::string build_log_text(const sandbox::BuildResult& build);

// Before any work: refuses an existing FILE unless `force` (nothing a user made is lost without
// asking), a folder that does not exist, and a name without the .tar.gz ending.
Status check_bundle_target(const std::filesystem::path& file, bool force);

// The archive's folder name (its only top-level entry).
inline constexpr const char* kBundleRoot = "kforge-bundle";

// Stages every member in a temporary folder, packs it with tar (gzip) and renames the archive over
// FILE. Returns the number of problems bundled.
StatusOr<size_t> write_bundle(const std::filesystem::path& file, const std::vector<BundleProblem>& problems,
                              const BundleRun& run);

}  // namespace kforge::cli
