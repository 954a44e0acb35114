// `kforge costmodel`: the measurement database and the learned correction of the roofline (issue #5).
//   ingest BENCH_JSON... --db FILE [--candidates DIR]   GPU results of `kforge bench` into the database
//   fit --db FILE [--held-out F] [--lambda L] [--out FILE] [--json FILE]
//                                                        trains the correction; reports Spearman's rho on
//                                                        held-out problems, roofline vs corrected
#pragma once

#include <string>
#include <vector>

namespace kforge::cli {

struct CostmodelIngestArgs {
  std::vector<std::string> bench_json;
  std::string db;
  std::string
      candidates;  // a bench --out directory (level/problem/{graph,schedule}.json) for old JSON without features
};
int run_costmodel_ingest(const CostmodelIngestArgs& a);

struct CostmodelFitArgs {
  std::string db;
  std::string device;    // only rows of this device (default: all)
  std::string protocol;  // only rows of this protocol (default: all)
  double held_out = 0.3;
  double lambda = 1.0;
  std::string out;       // write the correction fitted on all rows here
  std::string json_out;  // the report
  bool force = false;
};
int run_costmodel_fit(const CostmodelFitArgs& a);

}  // namespace kforge::cli
