// norm_epilogue: legality and the merge of a normalization kernel with the elementwise chain after it.
#include "skills/norm_epilogue.h"

#include "skills/epilogue_rules.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return epilogue_illegal(
      g, s, producer, consumer,
      [](const ir::Graph& gr, const schedule::Kernel& k) {
        return is_norm_kernel(k) && k.nodes.size() == 1 && is_norm_node(gr, k.nodes[0]);
      },
      "a generated float32 normalization kernel of the norm alone");
}

}  // namespace

std::vector<Site> norm_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return epilogue_sites(g, s, illegal);
}

StatusOr<schedule::Schedule> norm_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("norm_epilogue takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("norm_epilogue: " + why);
  return merge_epilogue(s, site, "norm_epilogue");
}

}  // namespace kforge::skills
