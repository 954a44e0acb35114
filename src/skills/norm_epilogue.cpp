// norm_epilogue: legality and the merge of a normalization kernel with the elementwise chain after it.
#include "skills/norm_epilogue.h"

#include "skills/epilogue_rules.h"

namespace kforge::skills {

namespace {

bool is_norm_node(const ir::Graph& g, int n) {
  const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
  return ir::op_info(node.op).family == ir::OpFamily::kNorm && g.type(node.output).dtype == ir::DType::kFloat32 &&
         !node.inputs.empty() && g.type(node.inputs[0]).dtype == ir::DType::kFloat32;
}

bool is_norm_kernel(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kGenerated && k.strategy == "norm_two_pass";
}

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return epilogue_illegal(
      g, s, producer, consumer,
      [](const ir::Graph& gr, const schedule::Kernel& k) {
        return is_norm_kernel(k) && k.nodes.size() == 1 && is_norm_node(gr, k.nodes[0]);
      },
      "a generated float32 normalization kernel of the norm alone");
}

}  // namespace

bool is_norm_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_norm_kernel(k) && k.nodes.size() > 1 && is_norm_node(g, k.nodes[0]) && tail_is_pointwise(g, k);
}

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
