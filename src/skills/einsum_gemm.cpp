// einsum_gemm: legality and the strategy change.
#include "skills/einsum_gemm.h"

#include "ir/shape_rules.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.strategy != "einsum_direct" || k.nodes.size() != 1)
    return "not a generated einsum kernel of one node";
  const ir::Node& node = g.nodes()[static_cast<size_t>(k.nodes[0])];
  if (ir::op_info(node.op).family != ir::OpFamily::kEinsum || node.inputs.size() != 2) return "not a 2-operand einsum";
  const ir::TensorType& out = g.type(node.output);
  const ir::TensorType& a = g.type(node.inputs[0]);
  const ir::TensorType& b = g.type(node.inputs[1]);
  if (!ir::is_floating(out.dtype) || a.dtype != out.dtype || b.dtype != out.dtype)
    return "cuBLAS GEMMs need floating operands of the output's dtype";
  auto view = ir::einsum_as_gemm(node.attrs.s("equation"), a.shape, b.shape, out.shape);
  if (!view.is_ok()) return view.status().message();
  return "";
}

}  // namespace

std::vector<Site> einsum_gemm_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (!illegal(g, s.kernels[k]).empty()) continue;
    Site site;
    site.kernels = {static_cast<int>(k)};
    site.what = s.kernels[k].name + " as one cuBLAS GEMM";
    out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> einsum_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 1 || site.kernels[0] < 0 || site.kernels[0] >= static_cast<int>(s.kernels.size()))
    return invalid_argument("einsum_gemm takes a site of one kernel of the schedule");
  const auto& k = s.kernels[static_cast<size_t>(site.kernels[0])];
  if (std::string why = illegal(g, k); !why.empty()) return invalid_argument("einsum_gemm: " + k.name + ": " + why);
  schedule::Schedule out = s;
  auto& changed = out.kernels[static_cast<size_t>(site.kernels[0])];
  changed.impl = schedule::Impl::kLibrary;
  changed.strategy = "cublas_gemm";
  out.applied.push_back("einsum_gemm: " + site.what);
  return out;
}

}  // namespace kforge::skills
