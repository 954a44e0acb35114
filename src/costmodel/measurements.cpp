// The measurement database: schema, features, and SQLite access (every call checked).
#include "costmodel/measurements.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/files.h"
#include "ir/op_registry.h"

namespace kforge::costmodel {

namespace {

double log10_of(double x) {
  return std::log10(std::max(x, 1e-12));
}

enum class KernelKind { kConv, kContraction, kReduction, kElementwise, kOther };

KernelKind kind_of(const ir::Graph& g, const schedule::Kernel& k) {
  switch (ir::op_info(g.nodes()[static_cast<size_t>(k.root())].op).family) {
    case ir::OpFamily::kConv:
    case ir::OpFamily::kConvTranspose: return KernelKind::kConv;
    case ir::OpFamily::kMatmul:
    case ir::OpFamily::kLinear:
    case ir::OpFamily::kEinsum:
    case ir::OpFamily::kAttention: return KernelKind::kContraction;
    case ir::OpFamily::kReduce:
    case ir::OpFamily::kArgReduce:
    case ir::OpFamily::kSoftmax:
    case ir::OpFamily::kNorm:
    case ir::OpFamily::kScan:
    case ir::OpFamily::kLoss:
    case ir::OpFamily::kTripletLoss:
    case ir::OpFamily::kPool:
    case ir::OpFamily::kAdaptivePool: return KernelKind::kReduction;
    case ir::OpFamily::kUnary:
    case ir::OpFamily::kBinary:
    case ir::OpFamily::kCast:
    case ir::OpFamily::kWhere:
    case ir::OpFamily::kCompare:
    case ir::OpFamily::kLogical: return KernelKind::kElementwise;
    default: return KernelKind::kOther;
  }
}

// A failed SQLite call as a Status, with the database's own words.
Status sqlite_error(sqlite3* db, const std::string& what) {
  return external_error("measurement database: " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

std::string features_text(const std::vector<double>& f) {
  std::ostringstream os;
  os.precision(17);
  for (size_t i = 0; i < f.size(); ++i) os << (i ? "," : "") << f[i];
  return os.str();
}

std::vector<double> features_from_text(const std::string& s) {
  std::vector<double> f;
  std::istringstream is(s);
  std::string item;
  while (std::getline(is, item, ',')) f.push_back(std::strtod(item.c_str(), nullptr));
  return f;
}

std::string column_text(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY,
  problem TEXT NOT NULL,
  protocol TEXT NOT NULL,
  device TEXT NOT NULL,
  torch TEXT NOT NULL,
  commit_id TEXT NOT NULL,
  date TEXT NOT NULL,
  schedule_hash TEXT NOT NULL,
  predicted_seconds REAL NOT NULL,
  measured_seconds REAL NOT NULL,
  feature_names TEXT NOT NULL,
  features TEXT NOT NULL,
  UNIQUE (problem, protocol, device, schedule_hash, commit_id)
);)sql";

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {
      "log10_predicted_seconds",
      "log10_floor_seconds",
      "log10_flops",
      "log10_bytes",
      "kernels",
      "library_kernels",
      "generated_kernels",
      "compute_bound_fraction",
      "launch_bound_fraction",
      "tensor_core_precision",
      "conv_kernels",
      "contraction_kernels",
      "reduction_kernels",
      "elementwise_kernels",
      "log10_predicted_over_floor",
      "log10_largest_kernel_seconds",
  };
  return names;
}

std::vector<double> candidate_features(const ir::Graph& g, const schedule::Schedule& s, const ProgramCost& cost) {
  double flops = 0, bytes = 0, compute_bound = 0, launch_bound = 0, largest = 0;
  for (const auto& k : cost.kernels) {
    flops += k.flops;
    bytes += k.bytes;
    compute_bound += k.bound == "compute";
    launch_bound += k.bound == "launch";
    largest = std::max(largest, k.seconds);
  }
  double library = 0, generated = 0, conv = 0, contraction = 0, reduction = 0, elementwise = 0;
  for (const auto& k : s.kernels) {
    library += k.impl == schedule::Impl::kLibrary;
    generated += k.impl == schedule::Impl::kGenerated;
    switch (kind_of(g, k)) {
      case KernelKind::kConv: ++conv; break;
      case KernelKind::kContraction: ++contraction; break;
      case KernelKind::kReduction: ++reduction; break;
      case KernelKind::kElementwise: ++elementwise; break;
      case KernelKind::kOther: break;
    }
  }
  const double n = std::max<double>(1, static_cast<double>(cost.kernels.size()));
  return {log10_of(cost.seconds),
          log10_of(cost.floor_seconds),
          log10_of(flops + 1),
          log10_of(bytes + 1),
          static_cast<double>(s.kernels.size()),
          library,
          generated,
          compute_bound / n,
          launch_bound / n,
          s.precision == "fp32" ? 0.0 : 1.0,
          conv,
          contraction,
          reduction,
          elementwise,
          log10_of(cost.seconds) - log10_of(cost.floor_seconds),
          log10_of(largest)};
}

std::string schedule_hash(const ir::Graph& g, const schedule::Schedule& s) {
  return schedule::program_hash(g, s).substr(0, 16);
}

StatusOr<std::unique_ptr<MeasurementDb>> MeasurementDb::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    Status st = sqlite_error(db, "cannot open " + path + " (check the directory exists and is writable)");
    sqlite3_close(db);
    return st;
  }
  std::unique_ptr<MeasurementDb> out(new MeasurementDb(db));
  sqlite3_busy_timeout(db, 5000);
  for (const char* sql : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", kSchema}) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string why = err ? err : "unknown error";
      sqlite3_free(err);
      return external_error("measurement database " + path + ": " + why + " (is it a kforge measurement database?)");
    }
  }
  return out;
}

MeasurementDb::~MeasurementDb() {
  sqlite3_close(db_);
}

Status MeasurementDb::record(const Measurement& m) {
  if (!(m.measured_seconds > 0) || !std::isfinite(m.measured_seconds))
    return invalid_argument("measurement of " + m.problem + ": measured time must be positive and finite");
  Statement st(db_,
               "INSERT INTO measurements (problem, protocol, device, torch, commit_id, date, schedule_hash, "
               "predicted_seconds, measured_seconds, feature_names, features) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
               "ON CONFLICT (problem, protocol, device, schedule_hash, commit_id) DO UPDATE SET "
               "torch = excluded.torch, date = excluded.date, predicted_seconds = excluded.predicted_seconds, "
               "measured_seconds = excluded.measured_seconds, feature_names = excluded.feature_names, "
               "features = excluded.features;");
  if (!st.ok()) return sqlite_error(db_, "preparing an insert");
  std::string names;
  for (const auto& n : feature_names()) names += (names.empty() ? "" : ",") + n;
  const std::string feats = features_text(m.features);
  const std::string texts[] = {m.problem, m.protocol, m.device, m.torch, m.commit, m.date, m.schedule_hash};
  int i = 1;
  for (const auto& t : texts) sqlite3_bind_text(st.get(), i++, t.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.get(), i++, m.predicted_seconds);
  sqlite3_bind_double(st.get(), i++, m.measured_seconds);
  sqlite3_bind_text(st.get(), i++, names.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), i++, feats.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return sqlite_error(db_, "recording " + m.problem);
  return Status::ok();
}

StatusOr<std::vector<Measurement>> MeasurementDb::all(const std::string& device, const std::string& protocol) const {
  Statement st(db_,
               "SELECT problem, protocol, device, torch, commit_id, date, schedule_hash, predicted_seconds, "
               "measured_seconds, feature_names, features FROM measurements "
               "WHERE (?1 = '' OR device = ?1) AND (?2 = '' OR protocol = ?2) ORDER BY id;");
  if (!st.ok()) return sqlite_error(db_, "preparing a query");
  sqlite3_bind_text(st.get(), 1, device.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), 2, protocol.c_str(), -1, SQLITE_TRANSIENT);
  std::string names;
  for (const auto& n : feature_names()) names += (names.empty() ? "" : ",") + n;
  std::vector<Measurement> rows;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    Measurement m;
    m.problem = column_text(st.get(), 0);
    m.protocol = column_text(st.get(), 1);
    m.device = column_text(st.get(), 2);
    m.torch = column_text(st.get(), 3);
    m.commit = column_text(st.get(), 4);
    m.date = column_text(st.get(), 5);
    m.schedule_hash = column_text(st.get(), 6);
    m.predicted_seconds = sqlite3_column_double(st.get(), 7);
    m.measured_seconds = sqlite3_column_double(st.get(), 8);
    // Rows written with another feature set are kept but carry no features a correction could use.
    if (column_text(st.get(), 9) == names) m.features = features_from_text(column_text(st.get(), 10));
    rows.push_back(std::move(m));
  }
  if (rc != SQLITE_DONE) return sqlite_error(db_, "reading measurements");
  return rows;
}

}  // namespace kforge::costmodel
