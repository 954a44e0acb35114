// kforge costmodel ingest / fit.
#include "cli/costmodel_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "base/files.h"
#include "base/json.h"
#include "base/table.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "costmodel/correction.h"
#include "costmodel/measurements.h"
#include "costmodel/roofline.h"
#include "schedule/schedule.h"

namespace kforge::cli {

namespace fs = std::filesystem;

namespace {

int fail(const char* cmd, const std::string& message, int code = kExitUserError) {
  std::fprintf(stderr, "kforge costmodel %s: error: %s\n", cmd, message.c_str());
  return code;
}

StatusOr<Json> read_json(const fs::path& p) {
  auto text = read_file(p);
  if (!text.is_ok()) return text.status();
  return parse_json(text.value(), p.string());
}

// Features, hash and roofline time of a candidate rebuilt from its bench directory's graph.json and
// schedule.json (for bench JSON written before records carried features).
Status features_from_candidate(const fs::path& dir, BenchRecord* r) {
  auto gj = read_json(dir / "graph.json");
  if (!gj.is_ok()) return gj.status();
  auto g = ir::graph_from_json(gj.value(), (dir / "graph.json").string());
  if (!g.is_ok()) return g.status();
  auto sj = read_json(dir / "schedule.json");
  if (!sj.is_ok()) return sj.status();
  auto s = schedule::schedule_from_json(g.value(), sj.value(), (dir / "schedule.json").string());
  if (!s.is_ok()) return s.status();
  const auto cost = costmodel::program_cost(g.value(), s.value());
  r->features = costmodel::candidate_features(g.value(), s.value(), cost);
  r->schedule_hash = costmodel::schedule_hash(g.value(), s.value());
  r->predicted_seconds = cost.seconds;
  return Status::ok();
}

std::string fixed3(double v) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

OrderedJson finite_or_null(double v) {
  return std::isfinite(v) ? OrderedJson(v) : OrderedJson(nullptr);
}

}  // namespace

int run_costmodel_ingest(const CostmodelIngestArgs& a) {
  auto db = costmodel::MeasurementDb::open(a.db);
  if (!db.is_ok()) return fail("ingest", db.status().message());
  int recorded = 0, not_measured = 0, no_features = 0;
  for (const auto& path : a.bench_json) {
    auto top = read_json(path);
    if (!top.is_ok()) return fail("ingest", top.status().message());
    if (top->value("format", "") != "kforge.bench/1" || !top->contains("problems"))
      return fail("ingest", path + " is not a kforge bench report (format kforge.bench/1)");
    if (top->value("predicted", true)) {
      std::fprintf(stderr, "kforge costmodel ingest: %s: predicted (no GPU), nothing to record\n", path.c_str());
      continue;
    }
    for (const auto& j : (*top)["problems"]) {
      BenchRecord fresh;
      fresh.problem.level = j.value("level", "");
      fresh.problem.name = j.value("problem", "");
      auto r = record_from_json(j, fresh, top.value());
      if (!r || r->result.outcome != sandbox::Outcome::kOk || r->result.predicted || !r->result.t_candidate) {
        ++not_measured;
        continue;
      }
      if (r->features.empty() && !a.candidates.empty()) {
        Status st = features_from_candidate(fs::path(a.candidates) / r->problem.level / r->problem.name, &*r);
        if (!st.is_ok())
          std::fprintf(stderr, "kforge costmodel ingest: %s/%s: %s\n", r->problem.level.c_str(),
                       r->problem.name.c_str(), st.message().c_str());
      }
      auto m = measurement_of(*r, top.value());
      if (!m) {
        ++no_features;
        continue;
      }
      if (Status st = (*db)->record(*m); !st.is_ok()) return fail("ingest", st.message(), kExitEnvironment);
      ++recorded;
    }
  }
  std::printf(
      "recorded %d measurements in %s; %d results not measured (wrong, failed or untimed); %d without "
      "features%s\n",
      recorded, a.db.c_str(), not_measured, no_features,
      no_features > 0 && a.candidates.empty() ? " (pass --candidates DIR: the bench run's --out directory)" : "");
  return recorded > 0 ? kExitOk : kExitFailedResult;
}

int run_costmodel_fit(const CostmodelFitArgs& a) {
  if (!fs::exists(a.db))
    return fail("fit", "no measurement database at " + a.db +
                           " (make one with `kforge costmodel ingest` or `kforge bench --db`)");
  for (const auto& p : {a.out, a.json_out}) {
    if (!p.empty() && fs::exists(p) && !a.force)
      return fail("fit", p + " exists; pick another path, or pass --force to overwrite it");
  }
  auto db = costmodel::MeasurementDb::open(a.db);
  if (!db.is_ok()) return fail("fit", db.status().message());
  auto rows = (*db)->all(a.device, a.protocol);
  if (!rows.is_ok()) return fail("fit", rows.status().message(), kExitEnvironment);
  auto report = costmodel::evaluate_correction(rows.value(), a.held_out, a.lambda);
  if (!report.is_ok()) return fail("fit", report.status().message());
  auto all = costmodel::fit_correction(rows.value(), a.lambda);
  if (!all.is_ok()) return fail("fit", all.status().message());

  const auto& r = report.value();
  Table t({"model", "held-out rows", "Spearman rho", "median |log10 error|"});
  t.add_row({"roofline", std::to_string(r.held_out_rows), fixed3(r.spearman_roofline),
             fixed3(r.median_abs_log10_error_roofline)});
  t.add_row({"roofline + learned correction", std::to_string(r.held_out_rows), fixed3(r.spearman_corrected),
             fixed3(r.median_abs_log10_error_corrected)});
  std::cout << "cost model on " << r.held_out_problems << " held-out problems (trained on " << r.train_rows
            << " measurements of " << r.train_problems << " other problems; ridge lambda " << a.lambda << ")\n"
            << t.render();

  OrderedJson j;
  j["format"] = "kforge.costmodel_fit/1";
  j["db"] = a.db;
  j["device"] = a.device;
  j["protocol"] = a.protocol;
  j["held_out_fraction"] = a.held_out;
  j["lambda"] = a.lambda;
  j["train_rows"] = r.train_rows;
  j["held_out_rows"] = r.held_out_rows;
  j["train_problems"] = r.train_problems;
  j["held_out_problems"] = r.held_out_problems;
  j["spearman_roofline"] = finite_or_null(r.spearman_roofline);
  j["spearman_corrected"] = finite_or_null(r.spearman_corrected);
  j["median_abs_log10_error_roofline"] = finite_or_null(r.median_abs_log10_error_roofline);
  j["median_abs_log10_error_corrected"] = finite_or_null(r.median_abs_log10_error_corrected);
  j["correction"] = costmodel::correction_to_json(all.value());
  if (!a.out.empty()) {
    if (Status st = write_file(a.out, costmodel::correction_to_json(all.value()).dump(1) + "\n"); !st.is_ok())
      return fail("fit", st.message(), kExitEnvironment);
    std::cout << "wrote the correction fitted on all " << all->trained_on << " measurements to " << a.out << "\n";
  }
  if (!a.json_out.empty()) {
    if (Status st = write_file(a.json_out, j.dump(1) + "\n"); !st.is_ok())
      return fail("fit", st.message(), kExitEnvironment);
  }
  return kExitOk;
}

}  // namespace kforge::cli
