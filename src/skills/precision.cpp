// tf32_contractions and split_tf32_contractions: legality from the schedule's tolerance and sizes.
#include "skills/precision.h"

#include <cstdio>

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

}  // namespace

std::vector<Site> split_tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s) {
  if (s.precision != "fp32") return {};
  Site site;
  std::vector<int> nodes;
  double flops = 0, added_bytes = 0;
  bool every_chunked = true;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const schedule::Kernel& kernel = s.kernels[k];
    if (on_cudnn(kernel)) return {};
    if (kernel.impl != schedule::Impl::kLibrary || kernel.strategy != schedule::Strategy::kCublasGemm) continue;
    const int node = contraction_node_of(g, kernel);
    if (node < 0) continue;
    const ir::Node& n = g.nodes()[static_cast<size_t>(node)];
    if (g.type(n.output).dtype != ir::DType::kFloat32) continue;
    const kernels::SplitTf32Gemm gemm = kernels::split_tf32_gemm_of(g, n, &kernel);
    site.kernels.push_back(static_cast<int>(k));
    nodes.push_back(node);
    flops += gemm.flops;
    added_bytes += gemm.ok ? gemm.added_bytes() : 0;
    every_chunked = every_chunked && gemm.ok && gemm.output_aligned && gemm.chunks.chunks > 0;
  }
  // Together, as one precision serves them all; a GEMM the split cannot take runs exact fp32 (no gain).
  if (site.kernels.empty() || !every_chunked || flops < kernels::kSplitTf32MinFlops ||
      flops < kernels::kSplitTf32MinFlopsPerByte * added_bytes)
    return {};
  // The tensor cores' accumulation bias over one chain (relative, systematic) within a quarter of the tolerance.
  if (kernels::kSplitTf32ChainBiasPerK * static_cast<double>(kernels::kSplitTf32MaxChainK) > s.tolerance / 4) return {};
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
