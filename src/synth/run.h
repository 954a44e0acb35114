// `kforge synth` as a library call: validates the arguments, opens (or resumes) the dataset
// directory, runs candidates on `jobs` worker threads (each with its own Python worker) until
// `count` tasks are accepted, and writes the dataset. The dataset is the first `count` accepted
// candidates in candidate order, so it does not depend on `jobs` or on interruptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::synth {

struct SynthOptions {
  int count = 6000;
  uint64_t seed = 1;
  std::filesystem::path out;
  std::vector<std::filesystem::path> against;
  int max_ops = 5;
  int jobs = 0;  // 0: all cores
  bool resume = false;
  // Called with one line for people while the run goes (start, progress, end); may be empty.
  std::function<void(const std::string&)> progress;
  double progress_interval_seconds = 5;
};

struct SynthSummary {
  OrderedJson report;
  std::string report_text;
  int64_t candidates_run = 0;  // candidates evaluated by this invocation (not loaded from a resume)
  double seconds = 0;
};

StatusOr<SynthSummary> run_synth(const SynthOptions& options);

// The benchmark problems under the --against directories (every .py below each, sorted), named
// "<dir name>/<path inside>". A missing directory or one without problems is an invalid_argument.
StatusOr<std::vector<std::pair<std::string, std::filesystem::path>>> benchmark_files(
    const std::vector<std::filesystem::path>& dirs);

}  // namespace kforge::synth
