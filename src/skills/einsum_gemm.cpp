// einsum_gemm: legality and the strategy change.
#include "skills/einsum_gemm.h"

#include "ir/shape_rules.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.strategy != schedule::Strategy::kEinsumDirect || k.nodes.size() != 1)
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

// illegal() as a KernelRule (the schedule is not needed).
std::string kernel_rule(const ir::Graph& g, const schedule::Schedule&, const schedule::Kernel& k) {
  return illegal(g, k);
}

}  // namespace

std::vector<Site> einsum_gemm_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return kernel_sites(g, s, kernel_rule, [](const std::string& kernel) { return kernel + " as one cuBLAS GEMM"; });
}

StatusOr<schedule::Schedule> einsum_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  KF_ASSIGN_OR_RETURN(const size_t k, site_kernel(g, s, site, kernel_rule, "einsum_gemm"));
  schedule::Schedule out = s;
  out.kernels[k].impl = schedule::Impl::kLibrary;
  out.kernels[k].strategy = schedule::Strategy::kCublasGemm;
  out.applied.push_back("einsum_gemm: " + site.what);
  return out;
}

}  // namespace kforge::skills
