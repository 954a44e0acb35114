// batch_norm_inference: legality and the change of strategy.
#include "skills/batch_norm_inference.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int k) {
  if (k < 0 || k >= static_cast<int>(s.kernels.size())) return "no such kernel";
  const auto& kernel = s.kernels[static_cast<size_t>(k)];
  if (kernel.impl != schedule::Impl::kGenerated || kernel.strategy != schedule::Strategy::kNormTwoPass ||
      kernel.nodes.size() != 1)
    return "the kernel must be a generated norm kernel of one node";
  const ir::Node& node = g.nodes()[static_cast<size_t>(kernel.nodes[0])];
  if (node.op != ir::OpId::kBatchNorm) return "the kernel's node is not a batch_norm";
  if (!ir::is_pointwise(node)) return "the batch_norm computes batch statistics (training mode)";
  auto given = [&](size_t i) { return i < node.inputs.size() && node.inputs[i] != ir::kNoValue; };
  if (!given(3) || !given(4)) return "the batch_norm has no running mean and variance";
  if (g.type(node.inputs[0]).shape.size() < 2) return "the batch_norm's input has no channel dim";
  return "";
}

}  // namespace

std::vector<Site> batch_norm_inference_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  for (int k = 0; k < static_cast<int>(s.kernels.size()); ++k) {
    if (!illegal(g, s, k).empty()) continue;
    Site site;
    site.kernels = {k};
    site.what = s.kernels[static_cast<size_t>(k)].name + " as a per-channel affine map";
    out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> batch_norm_inference(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 1) return invalid_argument("batch_norm_inference takes a site of one kernel");
  if (std::string why = illegal(g, s, site.kernels[0]); !why.empty())
    return invalid_argument("batch_norm_inference: " + why);
  schedule::Schedule out = s;
  auto& k = out.kernels[static_cast<size_t>(site.kernels[0])];
  k.strategy = schedule::Strategy::kElementwise;
  k.knobs = {{schedule::Knob::kBlock, k.knob(schedule::Knob::kBlock, 256)}};
  out.applied.push_back("batch_norm_inference: " + site.what);
  return out;
}

}  // namespace kforge::skills
