// conv_implicit_gemm: legality and the knob.
#include "skills/conv_implicit_gemm.h"

#include <cstdint>

#include "skills/conv_epilogue.h"
#include "skills/precision.h"

namespace kforge::skills {

namespace {

int64_t prod_from(const ir::Shape& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// Why kernel k cannot run its convolution as kforge's implicit GEMM ("" when it can).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k) {
  if (std::string why = another_conv_engine_illegal(g, s, k); !why.empty()) return why;
  if (k.knob(schedule::Knob::kChannelsLast, 0) != 0) return "already on cuDNN's channels-last path";
  if (k.knob(schedule::Knob::kEngineSearch, 0) != 0) return "already searching cuDNN's engines";
  const ir::Node& conv = g.nodes()[static_cast<size_t>(k.nodes.front())];
  if (ir::op_info(conv.op).family != ir::OpFamily::kConv) return "a transposed convolution";
  if (k.nodes.size() > 1 && !is_conv_epilogue(g, k)) return "more than an elementwise chain after the convolution";
  const ir::TensorType& x = g.type(conv.inputs[0]);
  const ir::TensorType& w = g.type(conv.inputs[1]);
  const ir::TensorType& y = g.type(conv.output);
  if (x.dtype != ir::DType::kFloat32 || y.dtype != ir::DType::kFloat32) return "not float32";
  if (x.shape.size() != 4) return "not a 2-d convolution";
  if (conv.attrs.i("groups") != 1) return "grouped";
  if (x.numel() == 0 || y.numel() == 0) return "empty";
  const auto stride = conv.attrs.ints("stride");
  const auto dilation = conv.attrs.ints("dilation");
  if (stride.size() != 2 || dilation.size() != 2) return "not a 2-d convolution's stride and dilation";
  return implicit_gemm_shape_illegal({.cin = x.shape[1],
                                      .cout = y.shape[1],
                                      .kh = w.shape[2],
                                      .kw = w.shape[3],
                                      .stride_w = stride[1],
                                      .dilation_w = dilation[1],
                                      .in_plane = prod_from(x.shape, 2),
                                      .out_plane = prod_from(y.shape, 2)});
}

}  // namespace

std::vector<Site> conv_implicit_gemm_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return kernel_sites(g, s, illegal, [](const std::string& kernel) {
    return "run " + kernel + "'s convolution as an implicit GEMM on TF32 tensor cores, its chain in the stores";
  });
}

StatusOr<schedule::Schedule> conv_implicit_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  return set_kernel_knob(g, s, site, illegal, "conv_implicit_gemm", schedule::Knob::kImplicitGemm, 1);
}

}  // namespace kforge::skills
