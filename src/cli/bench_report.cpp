// bench.json records, metrics per level and the summary table.
#include "cli/bench_report.h"

#include <algorithm>
#include <cstdio>

#include "base/table.h"
#include "sandbox/protocol.h"

namespace kforge::cli {

namespace {

OrderedJson optional_ms(const std::optional<double>& s) {
  return s ? OrderedJson(*s * 1e3) : OrderedJson(nullptr);
}

std::optional<double> seconds_of(const Json& j, const char* key_ms) {
  auto it = j.find(key_ms);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>() * 1e-3;
}

std::string percent(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * *v);
  return buf;
}

std::string times(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", *v);
  return buf;
}

std::string fixed2(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", *v);
  return buf;
}

std::string percent_1(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * *v);
  return buf;
}

std::vector<std::string> summary_row(const std::string& level, const sandbox::SuiteMetrics& m,
                                     const std::vector<std::string>& others) {
  std::vector<std::string> row = {level,
                                  std::to_string(m.problems),
                                  std::to_string(m.built),
                                  m.predicted ? "-" : std::to_string(m.correct),
                                  m.predicted ? "-" : percent(m.pass_rate),
                                  percent(m.faster_than_eager),
                                  percent(m.faster_than_compile),
                                  times(m.speedup_vs_eager),
                                  times(m.speedup_vs_compile),
                                  times(m.speedup_vs_compile_tf32),
                                  times(m.median_floor_ratio),
                                  fixed2(m.mean_reward),
                                  percent_1(m.max_repeat_diff)};
  for (const auto& name : others) {
    auto it = m.speedup_vs_baseline.find(name);
    row.push_back(it == m.speedup_vs_baseline.end() ? "-" : times(it->second));
  }
  return row;
}

}  // namespace

OrderedJson record_json(const BenchRecord& r) {
  const auto& e = r.result;
  OrderedJson j;
  j["level"] = r.problem.level;
  j["problem"] = r.problem.name;
  j["outcome"] = sandbox::outcome_name(e.outcome);
  j["correct"] = e.outcome == sandbox::Outcome::kOk && !e.predicted;
  j["predicted"] = e.predicted;
  j["t_candidate_ms"] = optional_ms(e.t_candidate);
  j["t_eager_ms"] = optional_ms(e.t_eager);
  j["t_compile_ms"] = optional_ms(e.t_compile);
  j["t_compile_tf32_ms"] = optional_ms(e.t_compile_tf32);
  j["t_candidate_repeat_ms"] = optional_ms(e.t_candidate_repeat);
  j["t_eager_repeat_ms"] = optional_ms(e.t_eager_repeat);
  j["t_candidate_wall_ms"] = optional_ms(e.t_candidate_wall);
  for (const auto& [name, t] : e.t_baselines) j["t_" + name + "_ms"] = t * 1e3;
  if (!e.compile_seconds.empty()) j["compile_seconds"] = e.compile_seconds;
  if (!e.timing_method.empty()) j["timing"] = e.timing_method;
  if (e.fresh_inputs) j["fresh_inputs"] = true;
  if (!e.warnings.empty()) j["warnings"] = e.warnings;
  if (!e.cuda_graph.is_null()) j["cuda_graph"] = e.cuda_graph;
  if (e.t_candidate) {
    const auto flags = sandbox::timing_flags(e);
    j["within_noise"] = flags.within_noise;
    j["escaped_stream"] = flags.escaped_stream;
    // Faster than half the roofline floor (every input read once, every output written once, at the
    // measured ceilings) is physically suspect: flagged for a person to look at. A rewrite that
    // provably skips an input (a constant output) can be legitimately below it.
    j["below_floor"] = !e.predicted && r.floor_seconds && *e.t_candidate < 0.5 * *r.floor_seconds;
  }
  j["t_floor_ms"] = optional_ms(r.floor_seconds);
  j["t_predicted_ms"] = optional_ms(r.predicted_seconds);
  j["max_abs_err"] = e.max_abs_err ? OrderedJson(*e.max_abs_err) : OrderedJson(nullptr);
  j["max_rel_err"] = e.max_rel_err ? OrderedJson(*e.max_rel_err) : OrderedJson(nullptr);
  auto reward = sandbox::milestone_reward(e);
  j["reward"] = reward ? OrderedJson(*reward) : OrderedJson(nullptr);
  j["samples"] = e.samples;
  j["build_seconds"] = r.build_seconds;
  if (!r.build_stages.is_null()) j["build_stages"] = r.build_stages;
  if (r.compile_cold_seconds) j["compile_cold_seconds"] = *r.compile_cold_seconds;
  j["verify_seconds"] = r.verify_seconds;
  j["out_dir"] = r.out_dir.string();
  if (!r.attempts.empty()) j["attempts"] = r.attempts;
  if (!r.schedule_hash.empty()) j["schedule_hash"] = r.schedule_hash;
  if (!r.features.empty()) {
    OrderedJson f;
    const auto& names = costmodel::feature_names();
    for (size_t i = 0; i < names.size() && i < r.features.size(); ++i) f[names[i]] = r.features[i];
    j["features"] = f;
  }
  if (!e.message.empty()) j["message"] = e.message.substr(0, 4000);
  return j;
}

// Features as record_json wrote them; empty when absent or written by a kforge with other features.
std::vector<double> features_from_json(const Json& j) {
  std::vector<double> out;
  if (!j.contains("features") || !j["features"].is_object()) return out;
  for (const auto& name : costmodel::feature_names()) {
    if (!j["features"].contains(name) || !j["features"][name].is_number()) return {};
    out.push_back(j["features"][name].get<double>());
  }
  return out;
}

std::optional<costmodel::Measurement> measurement_of(const BenchRecord& r, const Json& top) {
  const auto& e = r.result;
  if (e.predicted || e.outcome != sandbox::Outcome::kOk || !e.t_candidate || !r.predicted_seconds ||
      r.features.empty() || r.schedule_hash.empty())
    return std::nullopt;
  costmodel::Measurement m;
  m.problem = r.problem.level + "/" + r.problem.name;
  m.protocol = top.value("protocol", e.protocol);
  m.device = top.value("device", e.device);
  m.torch = top.value("torch", e.torch_version);
  m.commit = top.value("commit", "");
  m.date = top.value("date", "");
  m.schedule_hash = r.schedule_hash;
  m.predicted_seconds = *r.predicted_seconds;
  m.measured_seconds = *e.t_candidate;
  m.features = r.features;
  return m;
}

// A record of an earlier run's bench.json, as `record_json` wrote it (for --resume).
std::optional<BenchRecord> record_from_json(const Json& j, const BenchRecord& fresh, const Json& top) {
  auto outcome = sandbox::outcome_from_name(j.value("outcome", ""));
  if (!outcome) return std::nullopt;
  BenchRecord r = fresh;
  r.skipped = false;
  r.result.outcome = *outcome;
  r.result.predicted = j.value("predicted", true);
  r.result.protocol = top.value("protocol", "");
  r.result.device = r.result.predicted ? "cpu (roofline of NVIDIA H200)" : top.value("device", "");
  r.result.torch_version = top.value("torch", "");
  r.result.t_candidate = seconds_of(j, "t_candidate_ms");
  r.result.t_eager = seconds_of(j, "t_eager_ms");
  r.result.t_compile = seconds_of(j, "t_compile_ms");
  r.result.t_compile_tf32 = seconds_of(j, "t_compile_tf32_ms");
  r.result.t_candidate_repeat = seconds_of(j, "t_candidate_repeat_ms");
  r.result.t_eager_repeat = seconds_of(j, "t_eager_repeat_ms");
  r.result.t_candidate_wall = seconds_of(j, "t_candidate_wall_ms");
  for (const auto& name : sandbox::baseline_names()) {
    if (auto t = seconds_of(j, ("t_" + name + "_ms").c_str());
        t && name != "eager" && name != "compile" && name != "compile_tf32")
      r.result.t_baselines[name] = *t;
  }
  if (j.contains("compile_seconds") && j["compile_seconds"].is_object()) {
    for (const auto& [name, v] : j["compile_seconds"].items())
      if (v.is_number()) r.result.compile_seconds[name] = v.get<double>();
  }
  r.result.timing_method = j.value("timing", "");
  r.result.fresh_inputs = j.value("fresh_inputs", false);
  if (j.contains("cuda_graph") && j["cuda_graph"].is_object())
    r.result.cuda_graph = OrderedJson::parse(j["cuda_graph"].dump());
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& w : j["warnings"])
      if (w.is_string()) r.result.warnings.push_back(w.get<std::string>());
  }
  if (j.contains("max_abs_err") && j["max_abs_err"].is_number()) r.result.max_abs_err = j["max_abs_err"].get<double>();
  if (j.contains("max_rel_err") && j["max_rel_err"].is_number()) r.result.max_rel_err = j["max_rel_err"].get<double>();
  r.result.samples = j.value("samples", 0);
  r.result.message = j.value("message", "");
  r.floor_seconds = seconds_of(j, "t_floor_ms");
  r.predicted_seconds = seconds_of(j, "t_predicted_ms");
  r.build_seconds = j.value("build_seconds", 0.0);
  if (j.contains("build_stages") && j["build_stages"].is_object()) r.build_stages = OrderedJson(j["build_stages"]);
  if (j.contains("compile_cold_seconds") && j["compile_cold_seconds"].is_number())
    r.compile_cold_seconds = j["compile_cold_seconds"].get<double>();
  r.verify_seconds = j.value("verify_seconds", 0.0);
  r.schedule_hash = j.value("schedule_hash", "");
  r.features = features_from_json(j);
  r.built = *outcome != sandbox::Outcome::kCompileError && *outcome != sandbox::Outcome::kForbidden;
  return r;
}

OrderedJson metrics_json(const sandbox::SuiteMetrics& m) {
  auto opt = [](const std::optional<double>& v) { return v ? OrderedJson(*v) : OrderedJson(nullptr); };
  OrderedJson j;
  j["problems"] = m.problems;
  j["built"] = m.built;
  j["correct"] = m.correct;
  j["timed"] = m.timed;
  j["pass_rate"] = m.predicted ? OrderedJson(nullptr) : OrderedJson(m.pass_rate);
  j["faster_than_eager"] = opt(m.faster_than_eager);
  j["faster_than_compile"] = opt(m.faster_than_compile);
  j["speedup_vs_eager"] = opt(m.speedup_vs_eager);
  j["speedup_vs_compile"] = opt(m.speedup_vs_compile);
  j["faster_than_compile_tf32"] = opt(m.faster_than_compile_tf32);
  j["speedup_vs_compile_tf32"] = opt(m.speedup_vs_compile_tf32);
  for (const auto& [name, v] : m.speedup_vs_baseline) {
    j["faster_than_" + name] = m.faster_than_baseline.at(name);
    j["speedup_vs_" + name] = v;
  }
  j["warned"] = m.warned;
  j["median_floor_over_t"] = opt(m.median_floor_ratio);
  j["mean_reward"] = opt(m.mean_reward);
  j["max_repeat_diff"] = opt(m.max_repeat_diff);
  j["predicted"] = m.predicted;
  return j;
}

sandbox::SuiteMetrics metrics_of(const std::vector<const BenchRecord*>& rs) {
  std::vector<sandbox::EvalResult> results;
  std::vector<std::optional<double>> floors;
  for (const auto* r : rs) {
    results.push_back(r->result);
    floors.push_back(r->floor_seconds);
  }
  return sandbox::suite_metrics(results, floors);
}

// Records per level and "all"; problems skipped for the time limit are left out of every metric.
std::map<std::string, std::vector<const BenchRecord*>> by_level(const std::vector<BenchRecord>& records) {
  std::map<std::string, std::vector<const BenchRecord*>> out;
  for (const auto& r : records) {
    if (r.skipped) continue;
    out[r.problem.level].push_back(&r);
    out["all"].push_back(&r);
  }
  return out;
}

std::string summary_table(const std::vector<BenchRecord>& records) {
  std::vector<std::string> head = {
      "level",        "problems",       "built",         "correct",         "pass",
      "faster>eager", "faster>compile", "speedup/eager", "speedup/compile", "speedup/compile-tf32",
      "floor/t",      "reward",         "noise"};
  // A column per other baseline timed in this run (--baselines), in the registry's order.
  std::vector<std::string> others;
  for (const auto& name : sandbox::baseline_names()) {
    for (const auto& r : records) {
      if (r.result.t_baselines.count(name)) {
        others.push_back(name);
        head.push_back("speedup/" + name);
        break;
      }
    }
  }
  Table t(head);
  auto levels = by_level(records);
  for (const auto& [level, rs] : levels) {
    if (level != "all") t.add_row(summary_row(level, metrics_of(rs), others));
  }
  if (levels.size() > 2) {
    t.add_rule();
    t.add_row(summary_row("all", metrics_of(levels["all"]), others));
  }
  return t.render() + build_time_line(records);
}

std::string build_time_line(const std::vector<BenchRecord>& records) {
  std::vector<double> builds, colds, imports;
  int paired = 0, within = 0;
  for (const auto& r : records) {
    if (!r.built || r.build_seconds <= 0) continue;
    builds.push_back(r.build_seconds);
    if (r.build_stages.contains("import") && r.build_stages["import"].is_number())
      imports.push_back(r.build_stages["import"].get<double>());
    if (!r.compile_cold_seconds) continue;
    colds.push_back(*r.compile_cold_seconds);
    ++paired;
    within += r.build_seconds <= *r.compile_cold_seconds;
  }
  if (builds.empty()) return "";
  auto median_max = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    char text[64];
    std::snprintf(text, sizeof text, "median %.1f s, max %.1f s", v[v.size() / 2], v.back());
    return std::string(text);
  };
  std::string line = "build (import, plan, nvcc): " + median_max(builds);
  if (!imports.empty()) line += " (the import: " + median_max(imports) + ")";
  if (!colds.empty()) {
    line += "; torch.compile cold first call: " + median_max(colds) + "; build <= compile's cold call on " +
            std::to_string(within) + "/" + std::to_string(paired);
  }
  return line + "\n";
}

}  // namespace kforge::cli
