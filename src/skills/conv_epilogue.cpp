// conv_epilogue: legality and the merge of a convolution kernel with the elementwise chain after it.
#include "skills/conv_epilogue.h"

#include "skills/epilogue_rules.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return epilogue_illegal(
      g, s, producer, consumer,
      [](const ir::Graph& gr, const schedule::Kernel& k) {
        return is_conv_library_kernel(k) && k.nodes.size() == 1 && is_conv_node(gr, k.nodes[0]);
      },
      "a cuDNN convolution kernel of the convolution alone");
}

}  // namespace

std::vector<Site> conv_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return epilogue_sites(g, s, illegal);
}

StatusOr<schedule::Schedule> conv_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("conv_epilogue takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("conv_epilogue: " + why);
  return merge_epilogue(s, site, "conv_epilogue");
}

}  // namespace kforge::skills
