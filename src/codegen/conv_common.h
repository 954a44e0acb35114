// Shared by the convolution emitters (emit_conv.cpp; emit_conv_direct.cpp, emit_conv_epilogue.cpp) and their
// channels-last path (emit_conv_channels_last.cpp): the geometry of a conv, the KfCudnnConv of torch's engine, and the
// channels-last layout (knob channels_last = 1, the conv_channels_last skill).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "kernels/conv_implicit_gemm_bounds.h"

namespace kforge::codegen::conv {

// A convolution's dims (NCHW), as geometry() in emit_conv.cpp reads them from the node.
struct ConvGeom {
  bool transpose = false;
  size_t sp = 0;  // spatial dims
  int64_t n = 0, cin = 0, cout = 0, groups = 1;
  int64_t cin_g = 0, cout_g = 0;  // channels per group
  ir::Shape in_sp, out_sp, k_sp;
  std::vector<int64_t> stride, pad, dil, opad;
  int64_t in_sample = 0, out_sample = 0;  // elements per sample
  int64_t spatial_out = 1;
};

int64_t prod(const ir::Shape& s);
// The accumulation type of a conv on `t` tensors ("float" for 16-bit and fp32, "double" for fp64).
std::string acc_type(ir::DType t);
// The problem as a KfCudnnConv named kConv (runtime/kforge_cudnn.cu), channels-last or not.
std::string kconv_definition(const EmitContext& ctx, const ConvGeom& g, bool channels_last);

// The channels-last path: cuDNN on channels-last copies of input and weight (scratch in
// ctx->workspace), the result brought back to NCHW in one tiled pass that adds the bias and computes
// `epi`'s chain when given.
struct ChannelsLastEpilogue {
  PointwiseFunction chain;  // the chain's value at NCHW linear index i, seeded by the conv (plus bias)
  std::string name;         // its device function
  ir::DType out_dtype{};
};
// A pass back that replaces the transpose to NCHW (the conv_reduce_epilogue skill): its device code
// and the host statements that launch it; they read `ycl` (the channels-last result, before the
// bias) and write the kernel's output.
struct ChannelsLastEpilogue;
struct ChannelsLastBack {
  std::string device;
  std::string host;
  int64_t launches = 1;
  // When set, the transpose back to NCHW still runs, after `host`, with this epilogue (a norm's apply
  // from the statistics `host` computed); the epilogue's call_args may name the kernels' `n` and `c`.
  std::shared_ptr<ChannelsLastEpilogue> transpose_with;
};
// Builds that pass for the conv's geometry, given the bias pointer's host expression ("" without bias).
using ChannelsLastBackBuilder = std::function<StatusOr<ChannelsLastBack>(const ConvGeom&, const std::string& bias)>;
// The pass over the channels-last result that computes the kernel's channel consumer (softmax or
// reduction over dim 1) and the pointwise nodes before and after it (emit_conv_reduce.cpp). `ctx` is
// the whole kernel's.
StatusOr<ChannelsLastBack> channel_consumer_back(const EmitContext& ctx, const ConvGeom& g, const std::string& bias);

// The kernels that do not call cuDNN (emit_conv_direct.cpp), as device code inside an anonymous
// namespace of the caller: the direct kernel (<name>_direct: one thread per output element, its
// window gathered, fp32 or fp64 accumulation) and torch's depthwise design.
std::string direct_kernel(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                          bool has_bias);
// Depthwise as torch's ConvParams::is_depthwise has it.
bool is_depthwise(const ConvGeom& g);
// The whole kernel source of a depthwise conv: torch's CudaDepthwise2d/3d design and its entry.
std::string depthwise_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                           bool has_bias);

// "" when the channels-last path can run this convolution, else why not.
std::string channels_last_reason(const ConvGeom& g, ir::DType dt);
// The bytes of scratch the channels-last copies take (input, weight, output, each rounded to 256).
size_t channels_last_scratch(const EmitContext& ctx);
// The kernel's code: kConv, the transposes, the pass back (`back` when given, else the transpose with
// `epi`), and the entry function.
std::string channels_last_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, bool has_bias,
                               const ChannelsLastEpilogue* epi, const ChannelsLastBack* back, int64_t& launches);

// kforge's implicit GEMM on TF32 tensor cores (emit_conv_implicit_gemm.cpp, knob implicit_gemm = 1): "" when it
// can run this convolution, else why not; and the kernel's whole code after the prologue (device code and
// entry), the bias and `epi`'s chain (when given) applied in its stores.
std::string implicit_gemm_reason(const ConvGeom& g, ir::DType dt);
std::string implicit_gemm_code(const EmitContext& ctx, const ConvGeom& g, bool has_bias,
                               const ChannelsLastEpilogue* epi);

// The kernel of ctx's convolution (emit_conv.cpp). With leave_bias, the cuDNN paths skip their bias pass
// (the caller adds the bias in its epilogue) and set *bias_left; the direct and depthwise kernels add it
// inside. The knob implicit_gemm = 1 runs kforge's implicit GEMM (bias and `epi` inside, *epilogue_fused set).
// The knob channels_last = 1 puts the cuDNN path (torch's engine) on channels-last copies; the
// pass back to NCHW then also computes `epi` (when given) and sets *epilogue_fused. `back` (the
// conv_reduce_epilogue skill) replaces the channels-last pass back; *back_used says whether the
// channels-last path ran (other paths have no channels-last result to read).
StatusOr<KernelSource> emit_conv_family(const EmitContext& ctx, bool transpose, bool leave_bias = false,
                                        bool* bias_left = nullptr, const ChannelsLastEpilogue* epi = nullptr,
                                        bool* epilogue_fused = nullptr, const ChannelsLastBackBuilder* back = nullptr,
                                        bool* back_used = nullptr);
// The geometry of ctx's convolution node, or why it cannot be run.
StatusOr<ConvGeom> geometry(const EmitContext& ctx, bool transpose);

}  // namespace kforge::codegen::conv
