// The summary of a synthesized dataset: ops-per-task histogram, operator frequency, operator pairs
// covered, filter yield per stage, similarity and predicted-runtime distributions, and the seed
// library's coverage of the op registry; as JSON (report.json) and as tables for people.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "synth/record.h"

namespace kforge::synth {

struct ReportContext {
  uint64_t seed = 1;
  int count = 0;  // accepted tasks asked for
  int max_ops = 5;
  std::vector<std::string> against;  // directory names as the nearest-problem names use them
  int benchmark_problems = 0;
  std::string torch_version;
  bool torch_compile = false;
};

// `records`: every candidate of the dataset, in candidate order.
OrderedJson build_report(const std::vector<CandidateRecord>& records, const ReportContext& ctx);
std::string report_tables(const OrderedJson& report);

}  // namespace kforge::synth
