// The convolution kernels with more than the convolution (emit.h's dispatch): the conv_epilogue
// skill's chain after it, in the channels-last pass back or in place after cuDNN, and the
// conv_reduce_epilogue skill's consumer, computed in the pass over the channels-last result.
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/conv_common.h"
#include "codegen/emit.h"

namespace kforge::codegen {

using conv::acc_type;
using conv::ChannelsLastEpilogue;
using conv::ConvGeom;
using conv::emit_conv_family;
using conv::geometry;
using conv::prod;

StatusOr<KernelSource> emit_conv_epilogue(const EmitContext& ctx) {
  const ir::Graph& gr = ctx.graph;
  const int conv_node = ctx.kernel.nodes.front();
  const ir::Node& conv = gr.nodes()[static_cast<size_t>(conv_node)];
  const bool transpose = ir::op_info(conv.op).family == ir::OpFamily::kConvTranspose;
  const ir::ValueIndex conv_out = conv.output;
  const ir::ValueIndex result = ctx.node().output;
  if (gr.type(conv_out).shape != gr.type(result).shape || gr.type(conv_out).dtype != gr.type(result).dtype)
    return internal_error("kernel " + ctx.kernel.name +
                          ": the epilogue's result is not the convolution's shape and dtype");
  // The convolution alone, as its own function <name>_conv, writing into the epilogue's output.
  schedule::Kernel conv_kernel = ctx.kernel;
  conv_kernel.nodes = {conv_node};
  conv_kernel.name = ctx.kernel.name + "_conv";
  EmitContext conv_ctx(ctx, conv_kernel);
  conv_ctx.out_value = result;
  if (ctx.kernel.knob(schedule::Knob::kChannelsLast, 0) == 1 ||
      ctx.kernel.knob(schedule::Knob::kImplicitGemm, 0) == 1) {
    // Channels-last: the chain runs in the pass that brings the result back to NCHW (one write); the
    // implicit GEMM computes it in its stores.
    ChannelsLastEpilogue epi;
    epi.name = ctx.kernel.name + "_chain";
    epi.out_dtype = gr.type(result).dtype;
    const std::vector<int> chain(ctx.kernel.nodes.begin() + 1, ctx.kernel.nodes.end());
    // Rows of the NCHW result: one (sample, channel) plane, whose per-channel operands are read once.
    const ir::Shape& out_shape = gr.type(conv_out).shape;
    const int64_t plane = prod(ir::Shape(out_shape.begin() + std::min<size_t>(2, out_shape.size()), out_shape.end()));
    KF_ASSIGN_OR_RETURN(epi.chain, pointwise_function(ctx, chain, epi.name, conv_out, plane));
    bool fused = false;
    KF_ASSIGN_OR_RETURN(KernelSource src, emit_conv_family(conv_ctx, transpose, false, nullptr, &epi, &fused));
    if (fused) {
      std::string described;
      for (int n : chain) described += "//   " + ir::describe(gr, gr.nodes()[static_cast<size_t>(n)]) + "\n";
      src.name = ctx.kernel.name;
      src.file_name = ctx.kernel.name + ".cu";
      src.code += "\n// The epilogue (conv_epilogue skill), computed in " + conv_kernel.name +
                  "'s pass back to NCHW:\n" + described + ctx.signature() + " {\n  return " + conv_kernel.name +
                  "(ctx, bufs);\n}\n";
      return src;
    }
  }
  bool bias_left = false;
  KF_ASSIGN_OR_RETURN(KernelSource src, emit_conv_family(conv_ctx, transpose, true, &bias_left));
  KF_ASSIGN_OR_RETURN(ConvGeom g, geometry(conv_ctx, transpose));
  // The bias first, rounded to the tensor's type as torch's separate add rounds it, then the chain.
  ChainSeed seed;
  seed.value = conv_out;
  const std::string T = ctype(gr.type(conv_out).dtype);
  const std::string A = acc_type(gr.type(conv_out).dtype);
  if (bias_left) {
    seed.expr = "(" + T + ")((" + A + ")out[i] + (" + A + ")conv_bias[(i / " + std::to_string(g.spatial_out) +
                "LL) % " + std::to_string(g.cout) + "LL])";
    seed.params.push_back({"const " + T + "* __restrict__ conv_bias", conv_ctx.in_ptr(2)});
  } else {
    seed.expr = "out[i]";
  }
  KF_RETURN_IF_ERROR(
      append_library_epilogue(ctx, conv_kernel.name, seed,
                              "The epilogue (conv_epilogue skill): " + std::string(bias_left ? "the bias, then " : "") +
                                  "the elementwise chain, in place on the convolution's output",
                              src));
  return src;
}

StatusOr<KernelSource> emit_conv_reduce_epilogue(const EmitContext& ctx) {
  const ir::Graph& gr = ctx.graph;
  const int conv_node = ctx.kernel.nodes.front();
  const ir::Node& conv = gr.nodes()[static_cast<size_t>(conv_node)];
  const bool transpose = ir::op_info(conv.op).family == ir::OpFamily::kConvTranspose;
  // The convolution as its own function <name>_conv, whose pass back computes the rest of the kernel.
  schedule::Kernel conv_kernel = ctx.kernel;
  conv_kernel.nodes = {conv_node};
  conv_kernel.name = ctx.kernel.name + "_conv";
  EmitContext conv_ctx(ctx, conv_kernel);
  conv_ctx.out_value = ctx.node().output;
  const conv::ChannelsLastBackBuilder back = [&ctx](const ConvGeom& g, const std::string& bias) {
    return conv::channel_consumer_back(ctx, g, bias);
  };
  bool used = false;
  KF_ASSIGN_OR_RETURN(KernelSource src,
                      emit_conv_family(conv_ctx, transpose, false, nullptr, nullptr, nullptr, &back, &used));
  if (!used) {
    return invalid_argument("kernel " + ctx.kernel.name +
                            ": conv_reduce_epilogue needs the convolution on cuDNN's channels-last path (knob "
                            "channels_last = 1, torch's engine), which this convolution does not take");
  }
  std::string described;
  for (size_t i = 1; i < ctx.kernel.nodes.size(); ++i)
    described += "//   " + ir::describe(gr, gr.nodes()[static_cast<size_t>(ctx.kernel.nodes[i])]) + "\n";
  src.name = ctx.kernel.name;
  src.file_name = ctx.kernel.name + ".cu";
  src.code += "\n// Computed in " + conv_kernel.name +
              "'s pass over the channels-last result (conv_reduce_epilogue skill):\n" + described + ctx.signature() +
              " {\n  return " + conv_kernel.name + "(ctx, bufs);\n}\n";
  return src;
}

}  // namespace kforge::codegen
