// reduce_prologue: legality and the merge of a pointwise chain into the reduction that reads it.
#include "skills/reduce_prologue.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return prologue_illegal(g, s, producer, consumer, is_reduce_kernel, "a reduce kernel of one reduction");
}

}  // namespace

std::vector<Site> reduce_prologue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal,
                    [](const std::string& p, const std::string& c) { return p + " as the prologue of " + c; });
}

StatusOr<schedule::Schedule> reduce_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("reduce_prologue takes a site of two kernels");
  const int p = site.kernels[0];
  const int c = site.kernels[1];
  if (std::string why = illegal(g, s, p, c); !why.empty()) return invalid_argument("reduce_prologue: " + why);
  // Like fuse_elementwise: the chain's nodes go first; only the reduction read its result.
  return join_into_consumer(s, p, c, "reduce_prologue: " + site.what);
}

}  // namespace kforge::skills
