// The measurement database (issue #5): every candidate measured on a GPU, with the features the cost
// model sees, so that a learned correction of the roofline can be trained from what really ran.
// SQLite in WAL mode: a killed run loses nothing already recorded, and a candidate measured again
// (same problem, protocol, device, schedule and commit) replaces its row instead of adding one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "costmodel/roofline.h"
#include "ir/graph.h"
#include "schedule/schedule.h"

struct sqlite3;

namespace kforge::costmodel {

// The candidate features a correction may use, in this order (names for reports and JSON).
const std::vector<std::string>& feature_names();
// Features of one candidate: its graph, schedule and the roofline's view of it. All finite.
std::vector<double> candidate_features(const ir::Graph& g, const schedule::Schedule& s, const ProgramCost& cost);

// A stable hash of a schedule (kernels, strategies, knobs, precision): two rows with the same hash
// measured the same candidate.
std::string schedule_hash(const ir::Graph& g, const schedule::Schedule& s);

struct Measurement {
  std::string problem;   // "level1/19_ReLU"
  std::string protocol;  // "cuda-agent"
  std::string device;    // "NVIDIA H200"
  std::string torch;
  std::string commit;
  std::string date;
  std::string schedule_hash;
  double predicted_seconds = 0;  // the roofline's time
  double measured_seconds = 0;   // median of the GPU's timed trials
  std::vector<double> features;  // candidate_features(), in feature_names() order
};

class MeasurementDb {
 public:
  // Opens (creating when absent) the database at `path`, with WAL journaling.
  static StatusOr<std::unique_ptr<MeasurementDb>> open(const std::string& path);
  ~MeasurementDb();
  MeasurementDb(const MeasurementDb&) = delete;
  MeasurementDb& operator=(const MeasurementDb&) = delete;

  // Inserts, or replaces the row of the same problem, protocol, device, schedule and commit.
  Status record(const Measurement& m);
  // Every row, optionally of one device and/or protocol (empty: any), oldest first.
  StatusOr<std::vector<Measurement>> all(const std::string& device = "", const std::string& protocol = "") const;

 private:
  explicit MeasurementDb(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

}  // namespace kforge::costmodel
