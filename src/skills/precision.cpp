// tf32_contractions and split_tf32_contractions: legality from the schedule's tolerance and sizes.
#include "skills/precision.h"

#include <cstdio>

#include "ir/shape_rules.h"
#include "kernels/split_tf32.h"
#include "skills/tf32_error.h"

namespace kforge::skills {

namespace {

bool is_cublas(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary &&
         (k.strategy == schedule::Strategy::kCublasGemm || k.strategy == schedule::Strategy::kCublasAttention);
}

std::string tolerance_text(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", t);
  return buf;
}

Status tolerance_allows_tf32(const schedule::Schedule& s, const char* skill) {
  if (s.tolerance >= kTf32MinTolerance) return Status::ok();
  return invalid_argument(std::string(skill) + ": the tolerance " + tolerance_text(s.tolerance) +
                          " is below what TF32 needs (" + tolerance_text(kTf32MinTolerance) +
                          "); use the cuda-agent protocol, or keep exact fp32");
}

}  // namespace

std::string another_conv_engine_illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kLibrary ||
      (k.strategy != schedule::Strategy::kCudnnConv && k.strategy != schedule::Strategy::kCudnnConvTranspose))
    return "not a cuDNN convolution kernel";
  if (k.knob(schedule::Knob::kEngine, 0) != 0 || k.knob(schedule::Knob::kDirect, 0) != 0)
    return "the knob engine or direct is set";
  if (k.knob(schedule::Knob::kImplicitGemm, 0) != 0)
    return "runs kforge's implicit GEMM (conv_implicit_gemm), not cuDNN";
  if (s.tolerance < kTf32MinTolerance) return "the tolerance is below what another TF32 engine's rounding needs";
  if (s.precision == "3xtf32") return "precision 3xtf32 asks for exact fp32";
  const auto family = ir::op_info(g.nodes()[static_cast<size_t>(k.nodes.front())].op).family;
  if (family != ir::OpFamily::kConv && family != ir::OpFamily::kConvTranspose)
    return "its first node is not a convolution";
  return tf32_error_exceeds_tolerance(g, s, {k.nodes.front()});
}

std::vector<Site> tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s) {
  if (s.tolerance < kTf32MinTolerance || s.precision != "fp32") return {};
  Site site;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (!is_cublas(s.kernels[k])) continue;
    const ir::Node& root = g.nodes()[static_cast<size_t>(s.kernels[k].root())];
    if (g.type(root.output).dtype != ir::DType::kFloat32) continue;  // TF32 is a float32 mode
    site.kernels.push_back(static_cast<int>(k));
  }
  if (site.kernels.empty()) return {};
  std::vector<int> nodes;
  for (int k : site.kernels) nodes.push_back(contraction_node_of(g, s.kernels[static_cast<size_t>(k)]));
  if (!tf32_error_exceeds_tolerance(g, s, nodes).empty()) return {};
  site.what = "TF32 tensor cores for " + std::to_string(site.kernels.size()) + " cuBLAS kernels";
  return {site};
}

StatusOr<schedule::Schedule> tf32_contractions(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  KF_RETURN_IF_ERROR(tolerance_allows_tf32(s, "tf32_contractions"));
  if (s.precision != "fp32") return invalid_argument("tf32_contractions: the precision is already " + s.precision);
  if (tf32_contractions_sites(g, s).empty()) {
    std::vector<int> nodes;
    for (const auto& k : s.kernels)
      if (is_cublas(k) && contraction_node_of(g, k) >= 0) nodes.push_back(contraction_node_of(g, k));
    if (std::string why = tf32_error_exceeds_tolerance(g, s, nodes); !nodes.empty() && !why.empty())
      return invalid_argument("tf32_contractions: " + why);
    return invalid_argument("tf32_contractions: no float32 cuBLAS kernel to run in TF32");
  }
  schedule::Schedule out = s;
  out.precision = "tf32";
  out.applied.push_back("tf32_contractions: " + site.what);
  return out;
}

namespace {

bool on_cudnn(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary &&
         (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose ||
          k.strategy == schedule::Strategy::kCudnnRnn);
}

// FLOPs of a GEMM node (linear, matmul, einsum as one GEMM), 0 for anything else.
double gemm_flops(const ir::Graph& g, const ir::Node& n) {
  const double out = static_cast<double>(g.type(n.output).numel());
  switch (ir::op_info(n.op).family) {
    case ir::OpFamily::kLinear: return 2.0 * out * static_cast<double>(g.type(n.inputs[1]).shape.at(1));
    case ir::OpFamily::kMatmul: return 2.0 * out * static_cast<double>(g.type(n.inputs[0]).shape.back());
    case ir::OpFamily::kEinsum: {
      if (n.inputs.size() != 2) return 0;
      auto v = ir::einsum_as_gemm(n.attrs.s("equation"), g.type(n.inputs[0]).shape, g.type(n.inputs[1]).shape,
                                  g.type(n.output).shape);
      return v.is_ok() ? 2.0 * static_cast<double>(v->batch * v->m * v->n * v->k) : 0;
    }
    default: return 0;
  }
}

}  // namespace

std::vector<Site> split_tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s) {
  if (s.precision != "fp32") return {};
  Site site;
  std::vector<int> nodes;
  double flops = 0, operand_bytes = 0;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const schedule::Kernel& kernel = s.kernels[k];
    if (on_cudnn(kernel)) return {};
    if (kernel.impl != schedule::Impl::kLibrary || kernel.strategy != schedule::Strategy::kCublasGemm) continue;
    const int node = contraction_node_of(g, kernel);
    if (node < 0) continue;
    const ir::Node& n = g.nodes()[static_cast<size_t>(node)];
    if (g.type(n.output).dtype != ir::DType::kFloat32) continue;
    site.kernels.push_back(static_cast<int>(k));
    nodes.push_back(node);
    flops += gemm_flops(g, n);
    operand_bytes += static_cast<double>(g.type(n.inputs[0]).bytes() + g.type(n.inputs[1]).bytes());
  }
  if (site.kernels.empty() || !kernels::split_tf32_pays(flops, operand_bytes)) return {};
  if (!tf32_error_exceeds_tolerance(g, s, {}, nodes).empty()) return {};
  site.what = "3xTF32 tensor cores (fp32-accurate) for " + std::to_string(site.kernels.size()) + " cuBLAS GEMM kernels";
  return {site};
}

StatusOr<schedule::Schedule> split_tf32_contractions(const ir::Graph& g, const schedule::Schedule& s,
                                                     const Site& site) {
  if (s.precision != "fp32")
    return invalid_argument("split_tf32_contractions: the precision is already " + s.precision);
  if (split_tf32_contractions_sites(g, s).empty()) {
    return invalid_argument(
        "split_tf32_contractions: no float32 cuBLAS GEMM large enough for the split to pay (kernels/split_tf32.h), "
        "a cuDNN kernel in the schedule (3xtf32 would put it on exact FMA engines), or an error estimate above the "
        "tolerance");
  }
  schedule::Schedule out = s;
  out.precision = "3xtf32";
  out.applied.push_back("split_tf32_contractions: " + site.what);
  return out;
}

}  // namespace kforge::skills
