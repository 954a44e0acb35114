// conv_engine_search: legality and the knob.
#include "skills/conv_engine_search.h"

#include "skills/precision.h"

namespace kforge::skills {

namespace {

// Why kernel k cannot search its convolution's engine ("" when it can).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k) {
  if (std::string why = another_conv_engine_illegal(g, s, k); !why.empty()) return why;
  if (k.knob(schedule::Knob::kEngineSearch, 0) != 0) return "already searching";
  const ir::Node& conv = g.nodes()[static_cast<size_t>(k.nodes.front())];
  const auto family = ir::op_info(conv.op).family;
  const ir::TensorType& x = g.type(conv.inputs[0]);
  const int64_t groups = conv.attrs.i("groups");
  // Depthwise convs run torch's exact kernel (emit_conv.cpp), not cuDNN: nothing to search.
  if (family == ir::OpFamily::kConv && groups > 1 && x.shape.size() >= 2 && groups == x.shape[1])
    return "depthwise (torch's exact kernel, not cuDNN)";
  if (x.numel() == 0) return "empty";
  return "";
}

}  // namespace

std::vector<Site> conv_engine_search_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return kernel_sites(g, s, illegal, [](const std::string& kernel) {
    return "time " + std::to_string(kConvEnginesTimed) + " cuDNN engines for " + kernel +
           " on its first call and keep the fastest";
  });
}

StatusOr<schedule::Schedule> conv_engine_search(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  return set_kernel_knob(g, s, site, illegal, "conv_engine_search", schedule::Knob::kEngineSearch, kConvEnginesTimed);
}

}  // namespace kforge::skills
