// CandidateRecord <-> JSON.
#include "synth/record.h"

#include <cmath>
#include <cstdio>

namespace kforge::synth {

namespace {

std::string hex_seed(uint64_t s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(s));
  return buf;
}

double round4(double x) {
  return round_significant(x, 4);
}

}  // namespace

double round_significant(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kCompose: return "compose";
    case Stage::kSpineImport: return "spine_import";
    case Stage::kEager: return "eager";
    case Stage::kCompile: return "compile";
    case Stage::kDeterministic: return "deterministic";
    case Stage::kDistinguishable: return "distinguishable";
    case Stage::kRuntimeWindow: return "runtime_window";
    case Stage::kContamination: return "contamination";
  }
  return "?";
}

const char* stage_description(Stage s) {
  switch (s) {
    case Stage::kCompose: return "operators stack with shape-compatible arguments";
    case Stage::kSpineImport: return "kforge.importer traces it, the C++ IR re-infers its shapes";
    case Stage::kEager: return "KernelBench's loader accepts it; runs eagerly (CPU, batch 2)";
    case Stage::kCompile: return "runs under torch.compile (torch 2.x only)";
    case Stage::kDeterministic: return "no stochastic operators (same inputs, same outputs)";
    case Stage::kDistinguishable: return "outputs finite, not constant, differ across inputs (1e-2)";
    case Stage::kRuntimeWindow: return "eager time 1-100 ms on the H200 (PREDICTED by the cost model)";
    case Stage::kContamination: return "AST similarity to every benchmark problem <= 0.9";
  }
  return "?";
}

void CandidateRecord::pass(Stage s, OrderedJson detail) {
  OrderedJson j = {{"result", "pass"}};
  for (auto& [k, v] : detail.items()) j[k] = v;
  filters[stage_name(s)] = j;
}

void CandidateRecord::fail(Stage s, const std::string& message, OrderedJson detail) {
  OrderedJson j = {{"result", "fail"}, {"message", message}};
  for (auto& [k, v] : detail.items()) j[k] = v;
  filters[stage_name(s)] = j;
  accepted = false;
  rejected_at = stage_name(s);
}

void CandidateRecord::skip(Stage s, const std::string& message) {
  filters[stage_name(s)] = {{"result", "skipped"}, {"message", message}};
}

OrderedJson record_to_json(const CandidateRecord& r) {
  OrderedJson j;
  j["candidate"] = r.candidate;
  j["task_seed"] = hex_seed(r.task_seed);
  j["accepted"] = r.accepted;
  j["rejected_at"] = r.rejected_at.empty() ? OrderedJson(nullptr) : OrderedJson(r.rejected_at);
  j["ops"] = r.ops;
  j["data_source"] = r.data_source;
  j["title"] = r.title;
  j["registry_ops"] = r.registry_ops;
  j["batch_size"] = r.batch_size;
  j["predicted_eager_ms"] = round4(r.predicted_eager_ms);
  j["nearest_benchmark"] = r.nearest.empty() ? OrderedJson(nullptr) : OrderedJson(r.nearest);
  j["similarity"] = round4(r.similarity);
  j["filters"] = r.filters;
  if (r.accepted) {
    j["file"] = r.file;
    j["code"] = r.code;
  }
  return j;
}

StatusOr<CandidateRecord> record_from_json(const OrderedJson& j) {
  try {
    CandidateRecord r;
    r.candidate = j.at("candidate").get<int64_t>();
    r.task_seed = std::stoull(j.at("task_seed").get<std::string>(), nullptr, 16);
    r.accepted = j.at("accepted").get<bool>();
    r.rejected_at = j.at("rejected_at").is_null() ? "" : j.at("rejected_at").get<std::string>();
    r.ops = j.at("ops").get<std::vector<std::string>>();
    r.data_source = j.at("data_source").get<std::string>();
    r.title = j.at("title").get<std::string>();
    r.registry_ops = j.at("registry_ops").get<std::vector<std::string>>();
    r.batch_size = j.at("batch_size").get<int64_t>();
    r.predicted_eager_ms = j.at("predicted_eager_ms").get<double>();
    r.nearest = j.at("nearest_benchmark").is_null() ? "" : j.at("nearest_benchmark").get<std::string>();
    r.similarity = j.at("similarity").get<double>();
    r.filters = j.at("filters");
    if (r.accepted) {
      r.file = j.at("file").get<std::string>();
      r.code = j.value("code", "");  // candidates.jsonl leaves it to the task file
    }
    return r;
  } catch (const std::exception& e) {
    return invalid_argument(std::string("a candidate record is malformed: ") + e.what());
  }
}

OrderedJson index_entry(const CandidateRecord& r, uint64_t run_seed) {
  OrderedJson j;
  j["ops"] = r.ops;
  j["data_source"] = r.data_source;
  j["code"] = r.code;
  j["name"] = r.title;
  j["file"] = r.file;
  j["seed"] = run_seed;
  j["candidate"] = r.candidate;
  j["task_seed"] = hex_seed(r.task_seed);
  j["registry_ops"] = r.registry_ops;
  j["batch_size"] = r.batch_size;
  j["predicted_eager_ms"] = round4(r.predicted_eager_ms);
  j["predicted"] = true;
  j["nearest_benchmark"] = r.nearest.empty() ? OrderedJson(nullptr) : OrderedJson(r.nearest);
  j["similarity"] = round4(r.similarity);
  j["filters"] = r.filters;
  return j;
}

}  // namespace kforge::synth
