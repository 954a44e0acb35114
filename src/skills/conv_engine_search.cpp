// conv_engine_search: legality and the knob.
#include "skills/conv_engine_search.h"

#include "skills/precision.h"

namespace kforge::skills {

namespace {

// Why kernel k cannot search its convolution's engine ("" when it can).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kLibrary || (k.strategy != "cudnn_conv" && k.strategy != "cudnn_conv_transpose"))
    return "not a cuDNN convolution kernel";
  if (k.knob("engine_search", 0) != 0) return "already searching";
  if (k.knob("engine", 0) != 0 || k.knob("direct", 0) != 0) return "the knob engine or direct is set";
  if (s.tolerance < kTf32MinTolerance) return "the tolerance is below what another engine's rounding needs";
  if (s.precision == "3xtf32") return "precision 3xtf32 asks for exact fp32";
  const ir::Node& conv = g.nodes()[static_cast<size_t>(k.nodes.front())];
  const auto family = ir::op_info(conv.op).family;
  if (family != ir::OpFamily::kConv && family != ir::OpFamily::kConvTranspose)
    return "its first node is not a convolution";
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
  std::vector<Site> out;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (!illegal(g, s, s.kernels[k]).empty()) continue;
    Site site;
    site.kernels = {static_cast<int>(k)};
    site.what = "time " + std::to_string(kConvEnginesTimed) + " cuDNN engines for " + s.kernels[k].name +
                " on its first call and keep the fastest";
    out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> conv_engine_search(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 1 || site.kernels[0] < 0 || site.kernels[0] >= static_cast<int>(s.kernels.size()))
    return invalid_argument("conv_engine_search takes a site of one kernel of the schedule");
  const auto& k = s.kernels[static_cast<size_t>(site.kernels[0])];
  if (std::string why = illegal(g, s, k); !why.empty())
    return invalid_argument("conv_engine_search: " + k.name + ": " + why);
  schedule::Schedule out = s;
  out.kernels[static_cast<size_t>(site.kernels[0])].knobs["engine_search"] = kConvEnginesTimed;
  out.applied.push_back("conv_engine_search: " + site.what);
  return out;
}

}  // namespace kforge::skills
