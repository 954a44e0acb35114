// scan_prologue: legality and the merge of a pointwise chain into the scan that reads it.
#include "skills/scan_prologue.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  // Views before a scan are scan_reverse's (a flip) and scan_exclusive's (a slice), which also take the op
  // after the scan: a pointwise chain only, so that this skill never takes the view they start from.
  const int n = static_cast<int>(s.kernels.size());
  if (producer >= 0 && producer < n && !is_pointwise_chain(g, s.kernels[static_cast<size_t>(producer)]))
    return "the producer must be a generated pointwise chain (a view before a scan is scan_reverse's or "
           "scan_exclusive's)";
  return prologue_illegal(g, s, producer, consumer, is_scan_kernel, "a scan kernel of one scan");
}

}  // namespace

std::vector<Site> scan_prologue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal,
                    [](const std::string& p, const std::string& c) { return p + " as the prologue of " + c; });
}

StatusOr<schedule::Schedule> scan_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("scan_prologue takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("scan_prologue: " + why);
  return join_into_consumer(s, site.kernels[0], site.kernels[1], "scan_prologue: " + site.what);
}

}  // namespace kforge::skills
