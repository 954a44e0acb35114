// conv_epilogue: legality and the merge of a convolution kernel with the elementwise chain after it.
#include "skills/conv_epilogue.h"

#include <algorithm>

namespace kforge::skills {

namespace {

bool is_conv_node(const ir::Graph& g, int n) {
  const auto family = ir::op_info(g.nodes()[static_cast<size_t>(n)].op).family;
  return family == ir::OpFamily::kConv || family == ir::OpFamily::kConvTranspose;
}

bool is_conv_library_kernel(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary && (k.strategy == "cudnn_conv" || k.strategy == "cudnn_conv_transpose");
}

bool all_elementwise(const ir::Graph& g, std::vector<int>::const_iterator begin, std::vector<int>::const_iterator end) {
  return std::all_of(begin, end, [&](int n) {
    return ir::is_pointwise(g.nodes()[static_cast<size_t>(n)]);
  });
}

ir::ValueIndex result_of(const ir::Graph& g, const schedule::Kernel& k) {
  return g.nodes()[static_cast<size_t>(k.root())].output;
}

// Why the chain cannot become the convolution's epilogue ("" when it can).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  const int n = static_cast<int>(s.kernels.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer >= consumer)
    return "the convolution's kernel must run before the chain's";
  const auto& p = s.kernels[static_cast<size_t>(producer)];
  const auto& c = s.kernels[static_cast<size_t>(consumer)];
  if (!is_conv_library_kernel(p) || p.nodes.size() != 1 || !is_conv_node(g, p.nodes[0]))
    return "the producer must be a cuDNN convolution kernel of the convolution alone";
  if (c.impl != schedule::Impl::kGenerated || c.strategy != "elementwise" ||
      !all_elementwise(g, c.nodes.begin(), c.nodes.end()))
    return "the consumer must be a generated elementwise chain";
  const ir::ValueIndex v = result_of(g, p);
  const ir::TensorType& conv_type = g.type(v);
  const ir::TensorType& chain_type = g.type(result_of(g, c));
  if (conv_type.shape != chain_type.shape || conv_type.dtype != chain_type.dtype)
    return "the chain's result (" + ir::shape_str(chain_type.shape) + ", " + std::string(ir::dtype_name(chain_type.dtype)) +
           ") is not the convolution's (" + ir::shape_str(conv_type.shape) + ", " +
           std::string(ir::dtype_name(conv_type.dtype)) + "): the convolution writes into it";
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end())
    return "the convolution's result is a graph output, so it must be stored";
  bool read = false;
  for (int user : g.users(v)) {
    if (std::find(c.nodes.begin(), c.nodes.end(), user) == c.nodes.end())
      return "the convolution's result is also read by " + ir::describe(g, g.nodes()[static_cast<size_t>(user)]);
    read = true;
  }
  if (!read) return "the chain does not read the convolution's result";
  return "";
}

}  // namespace

bool is_conv_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_conv_library_kernel(k) && k.nodes.size() > 1 && is_conv_node(g, k.nodes[0]) &&
         all_elementwise(g, k.nodes.begin() + 1, k.nodes.end());
}

std::vector<Site> conv_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  for (int c = 0; c < static_cast<int>(s.kernels.size()); ++c) {
    for (int p = 0; p < c; ++p) {
      if (!illegal(g, s, p, c).empty()) continue;
      Site site;
      site.kernels = {p, c};
      site.what = s.kernels[static_cast<size_t>(c)].name + " as the epilogue of " +
                  s.kernels[static_cast<size_t>(p)].name;
      out.push_back(std::move(site));
    }
  }
  return out;
}

StatusOr<schedule::Schedule> conv_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("conv_epilogue takes a site of two kernels");
  const int p = site.kernels[0];
  const int c = site.kernels[1];
  if (std::string why = illegal(g, s, p, c); !why.empty()) return invalid_argument("conv_epilogue: " + why);
  schedule::Schedule out = s;
  // The merged kernel is the convolution's (library call, strategy, knobs) at the chain's place:
  // the convolution reads only values made before its old place, and nothing in between reads its
  // result (legality), so running it later is safe; the chain's other operands are ready there.
  schedule::Kernel merged = s.kernels[static_cast<size_t>(p)];
  const auto& chain = s.kernels[static_cast<size_t>(c)];
  merged.nodes.insert(merged.nodes.end(), chain.nodes.begin(), chain.nodes.end());
  if (chain.knobs.count("block")) merged.knobs["block"] = chain.knobs.at("block");
  out.kernels[static_cast<size_t>(c)] = std::move(merged);
  out.kernels.erase(out.kernels.begin() + p);
  out.applied.push_back("conv_epilogue: " + site.what);
  return out;
}

}  // namespace kforge::skills
