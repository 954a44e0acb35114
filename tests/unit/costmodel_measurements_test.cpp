// The measurement database (SQLite, WAL) and the learned correction of the roofline.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "costmodel/correction.h"
#include "costmodel/measurements.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::costmodel {
namespace {

using kforge::testing::graph_from_text;
using kforge::testing::temp_dir;

const char* kLinear = R"({"format": "kforge.graph/1", "name": "lin",
  "inputs": [{"id": "x", "name": "x", "shape": [64, 128], "dtype": "float32"}],
  "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [256, 128], "dtype": "float32"}],
  "nodes": [{"id": "h", "op": "linear", "inputs": ["x", "w", null], "attrs": {}, "shape": [64, 256], "dtype": "float32"},
            {"id": "y", "op": "relu", "inputs": ["h"], "attrs": {}, "shape": [64, 256], "dtype": "float32"}],
  "outputs": ["y"]})";

Measurement row(const std::string& problem, double predicted, double measured, std::vector<double> features) {
  Measurement m;
  m.problem = problem;
  m.protocol = "cuda-agent";
  m.device = "NVIDIA H200";
  m.torch = "2.11.0";
  m.commit = "abc1234";
  m.date = "2026-12-03";
  m.schedule_hash = "h-" + problem;
  m.predicted_seconds = predicted;
  m.measured_seconds = measured;
  m.features = std::move(features);
  return m;
}

TEST(CandidateFeatures, OnePerNameAndFinite) {
  auto g = graph_from_text(kLinear);
  const auto s = schedule::plan_one_kernel_per_op(g);
  auto f = candidate_features(g, s, program_cost(g, s));
  ASSERT_EQ(f.size(), feature_names().size());
  for (double v : f) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(f[4], static_cast<double>(s.kernels.size()));  // "kernels"
  // The same schedule hashes the same; a different precision does not.
  auto t = s;
  t.precision = "tf32";
  EXPECT_EQ(schedule_hash(g, s), schedule_hash(g, s));
  EXPECT_NE(schedule_hash(g, s), schedule_hash(g, t));
}

TEST(MeasurementDb, RecordsSurviveReopeningAndReplaceTheSameCandidate) {
  const auto dir = temp_dir("measurements");
  const std::string path = (dir / "m.sqlite").string();
  const std::vector<double> f(feature_names().size(), 0.5);
  {
    auto db = MeasurementDb::open(path);
    ASSERT_TRUE(db.is_ok()) << db.status().message();
    ASSERT_TRUE((*db)->record(row("level1/1_a", 1e-3, 2e-3, f)).is_ok());
    ASSERT_TRUE((*db)->record(row("level1/2_b", 1e-3, 3e-3, f)).is_ok());
    // Measured again: the row is replaced, not duplicated.
    ASSERT_TRUE((*db)->record(row("level1/1_a", 1e-3, 2.5e-3, f)).is_ok());
  }
  auto db = MeasurementDb::open(path);
  ASSERT_TRUE(db.is_ok());
  auto rows = (*db)->all();
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].problem, "level1/1_a");
  EXPECT_DOUBLE_EQ((*rows)[0].measured_seconds, 2.5e-3);
  EXPECT_EQ((*rows)[0].features, f);
  EXPECT_EQ((*db)->all("other device").value().size(), 0u);
  // A measured time that is not a time is refused.
  EXPECT_FALSE((*db)->record(row("level1/3_c", 1e-3, 0.0, f)).is_ok());
  EXPECT_FALSE((*db)->record(row("level1/3_c", 1e-3, NAN, f)).is_ok());
}

TEST(MeasurementDb, ABadPathIsAClearError) {
  auto db = MeasurementDb::open("/nonexistent-dir/for/sure/m.sqlite");
  ASSERT_FALSE(db.is_ok());
  EXPECT_NE(db.status().message().find("/nonexistent-dir/for/sure/m.sqlite"), std::string::npos);
}

TEST(Spearman, RanksNotValues) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 400}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(spearman({1}, {1})));
  // Ties get the average rank: x ranks (1, 2.5, 2.5, 4) against y's (1, 2, 3, 4): rho = 4.5 / sqrt(4.5 * 5).
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5.0), 1e-12);
}

// Measured = roofline * 10^(0.8 * feature0 - 0.3 * feature2): a correction that learns it ranks the
// held-out problems better than the roofline, whose rank order the hidden factor scrambles.
TEST(Correction, LearnsASystematicErrorAndRanksHeldOutProblemsBetter) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Measurement> rows;
  for (int i = 0; i < 200; ++i) {
    std::vector<double> f(feature_names().size());
    for (auto& v : f) v = u(rng);
    const double predicted = std::pow(10.0, -3 + 0.2 * u(rng));
    const double measured = predicted * std::pow(10.0, 0.8 * f[0] - 0.3 * f[2]);
    rows.push_back(row("p" + std::to_string(i), predicted, measured, f));
  }
  auto report = evaluate_correction(rows, 0.3, 0.001);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  EXPECT_GT(report->held_out_rows, 30);
  EXPECT_GT(report->train_rows, 100);
  EXPECT_GT(report->spearman_corrected, 0.99);
  EXPECT_LT(report->spearman_roofline, 0.6);
  EXPECT_LT(report->median_abs_log10_error_corrected, 0.01);

  auto c = fit_correction(rows, 0.001);
  ASSERT_TRUE(c.is_ok());
  auto back = correction_from_json(Json::parse(correction_to_json(c.value()).dump()));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_NEAR(back->corrected_seconds(1e-3, rows[0].features), c->corrected_seconds(1e-3, rows[0].features), 1e-15);
}

TEST(Correction, RefusesTooLittleData) {
  std::vector<Measurement> rows = {row("a", 1e-3, 1e-3, std::vector<double>(feature_names().size(), 0))};
  auto c = fit_correction(rows);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("at least 2"), std::string::npos);
  EXPECT_FALSE(correction_from_json(Json::parse(R"({"format": "something else"})")).is_ok());
}

}  // namespace
}  // namespace kforge::costmodel
