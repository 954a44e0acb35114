// The records of a bench run and how they read: JSON (bench.json, and back for --resume), the
// paper's metrics per level, and the table for people.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "costmodel/measurements.h"
#include "sandbox/metrics.h"
#include "sandbox/result.h"

namespace kforge::cli {

struct BenchProblem {
  std::string level;  // the directory it came from: "level1"
  std::string name;   // the file stem: "19_ReLU"
  std::filesystem::path path;
};

struct BenchRecord {
  BenchProblem problem;
  std::filesystem::path out_dir;
  bool built = false;
  sandbox::EvalResult result;
  std::optional<double> floor_seconds;      // cost model floor of the graph
  std::optional<double> predicted_seconds;  // cost model time of the candidate
  double build_seconds = 0;
  // Where build_seconds went: import, plan, codegen_and_build (wall seconds of each stage), nvcc_seconds (the
  // seconds of every nvcc run added up: core-seconds of compiling), units_compiled (nvcc runs that missed the
  // cache). Builds run side by side in bench, so a stage's wall time includes waiting for the machine.
  OrderedJson build_stages;
  // torch.compile's cold first call on the same problem (compile and run once, empty Inductor cache for its
  // graph: the baselines worker's precompile), the bar kforge's build is held to; unset where not measured.
  std::optional<double> compile_cold_seconds;
  double verify_seconds = 0;
  std::string schedule_hash;     // costmodel::schedule_hash of the candidate built
  std::vector<double> features;  // costmodel::candidate_features (the measurement database's columns)
  // The candidates tried before this one (the iterate step: cli::fallback_plans), each with its outcome;
  // empty when the first candidate was final. out_dir is the final candidate's folder.
  OrderedJson attempts = OrderedJson::array();
  bool skipped = true;  // no final result yet (not reached before --time-limit): left out of tables and JSON
};

// One problem's record as bench.json holds it; and back, for --resume (nullopt: not a final result).
OrderedJson record_json(const BenchRecord& r);
std::optional<BenchRecord> record_from_json(const Json& j, const BenchRecord& fresh, const Json& top);

// A record's features as record_json wrote them (empty: absent, or another kforge's feature set).
std::vector<double> features_from_json(const Json& j);

// The measurement-database row of a record that was measured on a GPU (correct and timed, with
// features); nullopt otherwise. `top` is the report (device, torch, protocol, commit, date).
std::optional<costmodel::Measurement> measurement_of(const BenchRecord& r, const Json& top);

// Records per level and "all"; problems skipped for the time limit are left out of every metric.
std::map<std::string, std::vector<const BenchRecord*>> by_level(const std::vector<BenchRecord>& records);
sandbox::SuiteMetrics metrics_of(const std::vector<const BenchRecord*>& rs);
OrderedJson metrics_json(const sandbox::SuiteMetrics& m);
std::string summary_table(const std::vector<BenchRecord>& records);
// The line under it: kforge's build times (import, plan, nvcc) beside torch.compile's cold first call on the
// same problems, and on how many the build took no longer; "" when nothing was built.
std::string build_time_line(const std::vector<BenchRecord>& records);

}  // namespace kforge::cli
