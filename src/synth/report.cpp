// build_report and report_tables.
#include "synth/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "base/table.h"
#include "synth/seed_library.h"
#include "synth/sizing.h"

namespace kforge::synth {

namespace {

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

// Counts sorted by count (descending), then name.
OrderedJson ranked(const std::map<std::string, int>& counts, const char* key, const char* value) {
  std::vector<std::pair<std::string, int>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  OrderedJson out = OrderedJson::array();
  for (const auto& [k, n] : v) out.push_back({{key, k}, {value, n}});
  return out;
}

OrderedJson yield_section(const std::vector<CandidateRecord>& records) {
  OrderedJson out = OrderedJson::array();
  std::map<std::string, std::map<std::string, int>> reasons;
  for (const auto& r : records) {
    if (r.accepted) continue;
    std::string msg = r.filters.at(r.rejected_at).value("message", "");
    if (msg.size() > 70) msg = msg.substr(0, 67) + "...";
    reasons[r.rejected_at][msg]++;
  }
  for (Stage s : kStages) {
    const std::string name = stage_name(s);
    int entered = 0;
    int passed = 0;
    int skipped = 0;
    for (const auto& r : records) {
      if (!r.filters.contains(name)) continue;
      ++entered;
      std::string result = r.filters.at(name).value("result", "");
      passed += result != "fail";
      skipped += result == "skipped";
    }
    OrderedJson row = {{"stage", name},
                       {"description", stage_description(s)},
                       {"entered", entered},
                       {"passed", passed},
                       {"rejected", entered - passed},
                       {"yield", entered ? round_significant(static_cast<double>(passed) / entered, 4) : 0.0}};
    if (skipped) row["skipped"] = skipped;
    OrderedJson top = ranked(reasons[name], "message", "count");
    if (top.size() > 5) top.erase(top.begin() + 5, top.end());
    row["top_reasons"] = top;
    out.push_back(row);
  }
  return out;
}

OrderedJson library_section() {
  const auto& lib = SeedLibrary::get();
  OrderedJson classes = OrderedJson::array();
  for (const auto& op : lib.ops()) {
    classes.push_back(
        {{"class", op.name}, {"category", category_name(op.category)}, {"registry_ops", op.registry_ops}});
  }
  OrderedJson covered = OrderedJson::array();
  OrderedJson uncovered = OrderedJson::array();
  for (const auto& c : registry_coverage(lib)) {
    if (c.classes.empty()) {
      uncovered.push_back({{"op", c.op}, {"reason", c.reason}});
    } else {
      covered.push_back({{"op", c.op}, {"classes", c.classes}});
    }
  }
  OrderedJson outside = OrderedJson::array();
  for (const auto& o : classes_outside_registry()) outside.push_back({{"what", o.what}, {"reason", o.reason}});
  return {{"classes", classes.size()},
          {"registry_ops", covered.size() + uncovered.size()},
          {"registry_ops_covered", covered.size()},
          {"covered", covered},
          {"not_covered", uncovered},
          {"outside_registry", outside},
          {"class_list", classes}};
}

}  // namespace

OrderedJson build_report(const std::vector<CandidateRecord>& records, const ReportContext& ctx) {
  std::vector<const CandidateRecord*> accepted;
  for (const auto& r : records) {
    if (r.accepted) accepted.push_back(&r);
  }
  const double n = static_cast<double>(accepted.size());

  OrderedJson per_task = OrderedJson::array();
  std::map<size_t, int> by_count;
  for (const auto* r : accepted) by_count[r->ops.size()]++;
  for (int k = 1; k <= ctx.max_ops; ++k) {
    int c = by_count[static_cast<size_t>(k)];
    per_task.push_back({{"ops", k},
                        {"data_source", "torch#" + std::to_string(k)},
                        {"tasks", c},
                        {"share", round_significant(n > 0 ? c / n : 0.0, 4)}});
  }

  std::map<std::string, int> op_tasks;
  std::map<std::string, int> registry;
  std::set<std::pair<std::string, std::string>> pairs;
  std::set<std::pair<std::string, std::string>> adjacent;
  for (const auto* r : accepted) {
    std::set<std::string> unique(r->ops.begin(), r->ops.end());
    for (const auto& o : unique) op_tasks[o]++;
    for (const auto& o : r->registry_ops) registry[o]++;
    for (auto a = unique.begin(); a != unique.end(); ++a) {
      for (auto b = std::next(a); b != unique.end(); ++b) pairs.insert({*a, *b});
    }
    for (size_t i = 0; i + 1 < r->ops.size(); ++i) adjacent.insert({r->ops[i], r->ops[i + 1]});
  }
  const auto& lib = SeedLibrary::get();
  const double classes = static_cast<double>(lib.ops().size());
  OrderedJson unused = OrderedJson::array();
  for (const auto& op : lib.ops()) {
    if (!op_tasks.count(op.name)) unused.push_back(op.name);
  }

  std::vector<int> sim_bins(10, 0);
  std::map<std::string, int> nearest;
  double max_sim = 0;
  std::vector<double> times;
  for (const auto* r : accepted) {
    if (!r->nearest.empty()) {
      sim_bins[static_cast<size_t>(std::min(9, static_cast<int>(r->similarity * 10)))]++;
      nearest[r->nearest]++;
      max_sim = std::max(max_sim, r->similarity);
    }
    times.push_back(r->predicted_eager_ms);
  }
  OrderedJson sim_hist = OrderedJson::array();
  for (int b = 0; b < 10; ++b) {
    sim_hist.push_back({{"from", b / 10.0}, {"to", (b + 1) / 10.0}, {"tasks", sim_bins[static_cast<size_t>(b)]}});
  }
  OrderedJson nearest_top = ranked(nearest, "problem", "tasks");
  if (nearest_top.size() > 10) nearest_top.erase(nearest_top.begin() + 10, nearest_top.end());

  std::sort(times.begin(), times.end());
  const std::vector<double> edges = {1, 2, 5, 10, 20, 50, 100};
  OrderedJson time_hist = OrderedJson::array();
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    int c = 0;
    for (double t : times) c += t >= edges[i] && (t < edges[i + 1] || (i + 2 == edges.size() && t <= edges[i + 1]));
    time_hist.push_back({{"from_ms", edges[i]}, {"to_ms", edges[i + 1]}, {"tasks", c}});
  }

  OrderedJson j;
  j["format"] = "kforge.synth-report/1";
  j["seed"] = ctx.seed;
  j["count"] = ctx.count;
  j["max_ops"] = ctx.max_ops;
  j["candidates"] = records.size();
  j["accepted"] = accepted.size();
  j["yield"] = round_significant(records.empty() ? 0.0 : n / static_cast<double>(records.size()), 4);
  j["torch"] = ctx.torch_version;
  j["torch_compile"] = ctx.torch_compile ? "checked" : "skipped: this torch has no torch.compile";
  j["eager_check"] = "CPU, batch_size 2 (every other size as in the task)";
  j["runtime"] = {{"predicted", true},
                  {"device", "NVIDIA H200 (roofline)"},
                  {"method", "cost model on the imported graph, one kernel per op (eager)"},
                  {"window_ms", {1, 100}}};
  j["against"] = ctx.against;
  j["benchmark_problems"] = ctx.benchmark_problems;
  j["ops_per_task"] = per_task;
  j["operator_frequency"] = ranked(op_tasks, "op", "tasks");
  j["operators_used"] = op_tasks.size();
  j["operators_unused"] = unused;
  j["registry_op_frequency"] = ranked(registry, "op", "nodes");
  j["pairs"] = {{"co_occurring", pairs.size()},
                {"possible", static_cast<int64_t>(classes * (classes - 1) / 2)},
                {"adjacent_ordered", adjacent.size()},
                {"adjacent_possible", static_cast<int64_t>(classes * (classes - 1))}};
  j["filter_yield"] = yield_section(records);
  j["similarity"] = {{"threshold", 0.9},
                     {"max", round_significant(max_sim, 4)},
                     {"histogram", sim_hist},
                     {"nearest_problems", nearest_top}};
  j["predicted_eager_ms"] = {{"median", times.empty() ? 0.0 : round_significant(times[times.size() / 2], 4)},
                             {"histogram", time_hist}};
  j["library"] = library_section();
  return j;
}

std::string report_tables(const OrderedJson& j) {
  std::string s;
  s += "kforge synth: " + std::to_string(j["accepted"].get<int>()) + " tasks accepted of " +
       std::to_string(j["candidates"].get<int>()) + " candidates (seed " + std::to_string(j["seed"].get<uint64_t>()) +
       ", torch " + j["torch"].get<std::string>() + ")\n";
  s += "runtime: PREDICTED by the cost model (NVIDIA H200 roofline, eager = one kernel per op); no GPU was used\n\n";

  Table yield({"stage", "entered", "passed", "yield", "what it checks"});
  for (const auto& row : j["filter_yield"]) {
    std::string stage = row["stage"].get<std::string>();
    if (row.contains("skipped")) stage += " (skipped " + std::to_string(row["skipped"].get<int>()) + ")";
    yield.add_row({stage, std::to_string(row["entered"].get<int>()), std::to_string(row["passed"].get<int>()),
                   percent(row["passed"].get<int>(), row["entered"].get<int>()),
                   row["description"].get<std::string>()});
  }
  s += "filter yield per stage\n" + yield.render() + "\n";

  Table ops({"ops per task", "data_source", "tasks", "share"});
  for (const auto& row : j["ops_per_task"]) {
    ops.add_row({std::to_string(row["ops"].get<int>()), row["data_source"].get<std::string>(),
                 std::to_string(row["tasks"].get<int>()), percent(row["share"].get<double>(), 1.0)});
  }
  s += ops.render() + "\n";

  Table freq({"operator", "tasks"});
  int shown = 0;
  for (const auto& row : j["operator_frequency"]) {
    if (shown++ == 15) break;
    freq.add_row({row["op"].get<std::string>(), std::to_string(row["tasks"].get<int>())});
  }
  s += "operator frequency (top 15 of " + std::to_string(j["operators_used"].get<int>()) + " used; " +
       std::to_string(j["operators_unused"].size()) + " library classes unused)\n" + freq.render() + "\n";

  const auto& p = j["pairs"];
  s += "operator pairs covered: " + std::to_string(p["co_occurring"].get<int64_t>()) + " of " +
       std::to_string(p["possible"].get<int64_t>()) + " unordered pairs co-occur in a task; " +
       std::to_string(p["adjacent_ordered"].get<int64_t>()) + " ordered adjacent pairs (a -> b)\n";
  const auto& sim = j["similarity"];
  s += "contamination: max AST similarity of an accepted task " + fixed(sim["max"].get<double>(), 3) +
       " (threshold 0.9) against " + std::to_string(j["benchmark_problems"].get<int>()) + " benchmark problems\n";
  s += "predicted eager time: median " + fixed(j["predicted_eager_ms"]["median"].get<double>(), 2) + " ms\n";
  const auto& lib = j["library"];
  s += "seed library: " + std::to_string(lib["classes"].get<int>()) + " operator classes covering " +
       std::to_string(lib["registry_ops_covered"].get<int>()) + " of " +
       std::to_string(lib["registry_ops"].get<int>()) +
       " registry ops (report.json: library.not_covered says why for the rest)\n";
  return s;
}

}  // namespace kforge::synth
