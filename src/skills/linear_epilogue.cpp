// linear_epilogue: legality and the merge of a cuBLAS linear kernel with the elementwise chain after it.
#include "skills/linear_epilogue.h"

#include "skills/epilogue_rules.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return epilogue_illegal(
      g, s, producer, consumer,
      [](const ir::Graph& gr, const schedule::Kernel& k) { return is_linear_kernel(gr, k) && k.nodes.size() == 1; },
      "a cuBLAS kernel of one linear");
}

}  // namespace

std::vector<Site> linear_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return epilogue_sites(g, s, illegal);
}

StatusOr<schedule::Schedule> linear_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("linear_epilogue takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("linear_epilogue: " + why);
  return merge_epilogue(s, site, "linear_epilogue");
}

}  // namespace kforge::skills
