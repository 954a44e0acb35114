// Conv and ConvTranspose (1-d, 2-d, 3-d; stride, padding, dilation, groups, output_padding, bias),
// computed the way PyTorch computes them, because the reference is torch's own conv and the
// kernelbench protocol compares at 1e-4: torch runs fp32 convs in TF32 on cuDNN by default
// (torch.backends.cudnn.allow_tf32), and another cuDNN engine rounds differently, by up to a few 1e-3.
//
// The knob "engine" picks how (default 0):
//  - 0, torch's engine: kf_cudnn_conv (runtime/kforge_cudnn.cu) on cuDNN's backend API builds the graph
//    torch's Conv_v8.cpp builds (one forward op for conv; for the transposed conv the backward-data op,
//    conv_transpose(x, w) being the input-gradient of conv(., w) with the same stride, padding,
//    dilation and groups, output_padding only lengthening the output), takes the engine
//    configurations of cuDNN's heuristics in torch's order with torch's filters, and runs the first
//    one that works, cached per device and alignment. So it runs the engine torch runs, with its
//    rounding. 1-d convs run as 2-d with a unit height, as torch views them. No batch chunking: torch
//    hands cuDNN the whole tensor too. Precision "fp32" and "tf32" keep torch's default filter
//    (TF32 engines allowed); "3xtf32", better than TF32, drops tensor-core engines, as torch does
//    with allow_tf32 = False.
//    Depthwise convs (not transposed, groups == C_in > 1, C_out a multiple of C_in) in fp32, fp64
//    or bf16 never reach cuDNN in torch: they run its exact CudaDepthwise2d/3d kernels. Here too: a
//    generated kernel of the same design (one thread per output, the window unrolled, the bias
//    first, fp32 fused multiply-adds), exact where cuDNN would round to TF32. (torch sends some
//    fp16 depthwise shapes to cuDNN by a workload table; fp16 goes to cuDNN here.)
//  - 1, cudnnFind's fastest: the legacy API (cudnnConvolutionForward / BackwardData), the algorithm
//    timed by cudnnFind*AlgorithmEx within the workspace on the first call (the heuristic
//    cudnnGet*_v7 under CUDA graph capture, as Find synchronizes), CUDNN_DEFAULT_MATH for fp32 (TF32
//    allowed, never fp16 down-conversion; CUDNN_FMA_MATH for 3xtf32), CUDNN_TENSOR_OP_MATH for 16-bit
//    types. Often faster than torch's choice, but it rounds differently: for the looser cuda-agent
//    protocol (1e-2). Batches too large for int dims go in chunks.
// Either way the bias is a small generated kernel after the convolution (y += bias[c]), as torch
// adds it after cuDNN.
//
// The knob "channels_last" = 1 (the conv_channels_last skill) runs torch's engine on channels-last
// copies of the input and weight, as torch runs a conv whose tensors are channels-last (what
// torch.compile arranges): 1.3-2.1x faster convs on the H200, another engine than eager's, so other
// rounding (the cuda-agent protocol only). The output comes back to NCHW in one tiled pass that also
// adds the bias and computes a conv_epilogue chain. See channels_last_code.
//
// Cases cuDNN cannot take at all (a sample or the weight over 2^31-1 elements, where torch leaves
// cuDNN for exact im2col GEMMs, an empty input with a non-empty output, more than 3 spatial dims,
// output_padding >= stride, which torch itself sends to its slow non-cuDNN kernels) use a direct
// generated kernel: one thread per output element, fp32 (fp64) accumulation. The knob "direct" = 1
// forces that kernel (a reference for tests).
#include <algorithm>
#include <climits>
#include <optional>
#include <sstream>

#include "codegen/conv_common.h"
#include "codegen/emit.h"

namespace kforge::codegen {

namespace conv {

int64_t prod(const ir::Shape& s) {
  int64_t p = 1;
  for (auto d : s) p *= d;
  return p;
}

std::string acc_type(ir::DType t) {
  return t == ir::DType::kFloat64 ? "double" : "float";
}

}  // namespace conv

namespace {

using conv::acc_type;
using conv::channels_last_code;
using conv::channels_last_reason;
using conv::channels_last_scratch;
using conv::ChannelsLastEpilogue;
using conv::ConvGeom;
using conv::depthwise_code;
using conv::direct_kernel;
using conv::emit_conv_family;
using conv::geometry;
using conv::is_depthwise;
using conv::kconv_definition;
using conv::prod;

// The knob "engine".
constexpr int64_t kTorchEngine = 0;  // the cuDNN engine torch runs (exact kernels for depthwise)
constexpr int64_t kFindEngine = 1;   // cudnnFind's fastest algorithm, legacy API
// The knob "engine_search": at most this many engines timed on the first call.
constexpr int64_t kMaxEnginesTimed = 64;

const char* kBackendPrelude =
    "#include <cudnn.h>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n";

}  // namespace

namespace conv {

StatusOr<ConvGeom> geometry(const EmitContext& ctx, bool transpose) {
  const ir::Node& node = ctx.node();
  const ir::Shape& x = ctx.in_type(0).shape;
  const ir::Shape& w = ctx.in_type(1).shape;
  const ir::Shape& y = ctx.out_type().shape;
  ConvGeom g;
  g.transpose = transpose;
  if (w.size() < 3 || x.size() != w.size() || y.size() != w.size()) {
    return invalid_argument("convolution needs a batched input " + ir::shape_str(x) + " of the weight's rank " +
                            ir::shape_str(w));
  }
  g.sp = w.size() - 2;
  g.stride = node.attrs.ints("stride");
  g.pad = node.attrs.ints("padding");
  g.dil = node.attrs.ints("dilation");
  g.opad = transpose ? node.attrs.ints("output_padding") : std::vector<int64_t>(g.sp, 0);
  g.groups = node.attrs.i("groups");
  if (g.stride.size() != g.sp || g.pad.size() != g.sp || g.dil.size() != g.sp || g.opad.size() != g.sp) {
    return invalid_argument("stride, padding, dilation (and output_padding) need one entry per spatial dim");
  }
  if (g.groups < 1) return invalid_argument("groups must be positive");
  for (size_t i = 0; i < g.sp; ++i) {
    if (g.stride[i] < 1 || g.dil[i] < 1 || g.pad[i] < 0 || g.opad[i] < 0) {
      return invalid_argument("stride and dilation must be positive, padding and output_padding non-negative");
    }
  }
  g.n = x[0];
  g.cin = x[1];
  g.cout = y[1];
  if (transpose) {
    g.cin_g = g.cin / g.groups;
    g.cout_g = w[1];
    if (w[0] != g.cin || g.cin % g.groups != 0 || g.cout != g.cout_g * g.groups) {
      return invalid_argument("conv_transpose weight " + ir::shape_str(w) + " does not fit input " + ir::shape_str(x) +
                              " with groups " + std::to_string(g.groups));
    }
  } else {
    g.cin_g = w[1];
    g.cout_g = g.cout / g.groups;
    if (g.cin != g.cin_g * g.groups || w[0] != g.cout || g.cout % g.groups != 0) {
      return invalid_argument("conv weight " + ir::shape_str(w) + " does not fit input " + ir::shape_str(x) +
                              " with groups " + std::to_string(g.groups));
    }
  }
  g.in_sp.assign(x.begin() + 2, x.end());
  g.out_sp.assign(y.begin() + 2, y.end());
  g.k_sp.assign(w.begin() + 2, w.end());
  g.in_sample = g.cin * prod(g.in_sp);
  g.out_sample = g.cout * prod(g.out_sp);
  g.spatial_out = prod(g.out_sp);
  return g;
}

}  // namespace conv

namespace {

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

// Why cuDNN cannot run this convolution ("" when it can).
std::string direct_reason(const EmitContext& ctx, const ConvGeom& g) {
  if (ctx.kernel.knob(schedule::Knob::kDirect, 0) != 0) return "the knob direct = 1 asks for the direct kernel";
  if (g.sp > 3) return "cuDNN takes at most 3 spatial dims";
  if (ctx.in_type(0).numel() == 0) return "the input is empty (cuDNN takes no zero dims) but the output is not";
  for (size_t i = 0; i < g.sp; ++i) {
    if (g.transpose && g.opad[i] >= g.stride[i]) {
      return "output_padding >= stride, which cuDNN cannot express (torch uses its slow non-cuDNN kernel here too)";
    }
    if (!fits_int(g.stride[i]) || !fits_int(g.pad[i]) || !fits_int(g.dil[i]) || !fits_int(g.in_sp[i]) ||
        !fits_int(g.out_sp[i]) || !fits_int(g.k_sp[i])) {
      return "a dim or window parameter does not fit in int32";
    }
  }
  if (!fits_int(g.cin) || !fits_int(g.cout) || !fits_int(g.groups)) return "a channel count does not fit in int32";
  if (!fits_int(ctx.in_type(1).numel())) return "the weight has more than 2^31-1 elements";
  if (!fits_int(g.in_sample) || !fits_int(g.out_sample)) return "one sample has more than 2^31-1 elements";
  return "";
}

std::string cudnn_type(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32: return "CUDNN_DATA_FLOAT";
    case ir::DType::kFloat16: return "CUDNN_DATA_HALF";
    case ir::DType::kBFloat16: return "CUDNN_DATA_BFLOAT16";
    case ir::DType::kFloat64: return "CUDNN_DATA_DOUBLE";
    default: return "";
  }
}

std::string int_list(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "}";
  return os.str();
}

// y[i] += bias[c] over the output, or y[i] = bias[c] / 0 when the contraction is empty (`fill`).
std::string bias_kernel(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                        bool has_bias, bool fill) {
  std::ostringstream os;
  int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
  os << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_bias("
     << (has_bias ? "const " + T + "* __restrict__ b, " : "") << T << "* __restrict__ y) {\n"
     << "  KF_GRID_STRIDE(i, " << ctx.out_type().numel() << "LL) {\n";
  std::string bv =
      has_bias ? "(" + A + ")b[(i / " + std::to_string(g.spatial_out) + "LL) % " + std::to_string(g.cout) + "LL]"
               : "(" + A + ")0";
  if (fill) {
    os << "    y[i] = (" << T << ")(" << bv << ");\n";
  } else {
    os << "    y[i] = (" << T << ")((" << A << ")y[i] + " << bv << ");\n";
  }
  os << "  }\n}\n";
  return os.str();
}

std::string bias_launch(const EmitContext& ctx, bool has_bias) {
  int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
  std::ostringstream os;
  os << "  " << ctx.kernel.name << "_bias<<<kf_grid(" << ctx.out_type().numel() << "LL, " << block << "), " << block
     << ", 0, ctx->stream>>>(" << (has_bias ? ctx.in_ptr(2) + ", " : "") << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n";
  return os.str();
}

// The dims cuDNN sees: a 1-d conv as 2-d with a unit height (stride 1, padding 0, dilation 1
// prepended), as torch's view1d_as_2d makes it.
struct CudnnView {
  std::vector<int64_t> pad, stride, dil, in_sp, out_sp, k_sp;
};

CudnnView cudnn_view(const ConvGeom& g) {
  CudnnView v{g.pad, g.stride, g.dil, g.in_sp, g.out_sp, g.k_sp};
  if (g.sp == 1) {
    v.pad.insert(v.pad.begin(), 0);
    v.stride.insert(v.stride.begin(), 1);
    v.dil.insert(v.dil.begin(), 1);
    v.in_sp.insert(v.in_sp.begin(), 1);
    v.out_sp.insert(v.out_sp.begin(), 1);
    v.k_sp.insert(v.k_sp.begin(), 1);
  }
  return v;
}

// A C initializer of `n` int64 values, zero-padded: "{2, 8, 17, 19, 0}".
std::string padded_list(std::vector<int64_t> v, size_t n) {
  v.resize(n, 0);
  return int_list(v);
}

}  // namespace

namespace conv {

// torch's engine: the problem as a KfCudnnConv named kConv, run by kf_cudnn_conv
// (runtime/kforge_cudnn.cu); with channels_last, on channels-last tensors.
std::string kconv_definition(const EmitContext& ctx, const ConvGeom& g, bool channels_last) {
  const ir::DType dt = ctx.out_type().dtype;
  const CudnnView v = cudnn_view(g);
  const ir::Shape& w = ctx.in_type(1).shape;
  std::vector<int64_t> in_dims{g.n, g.cin}, w_dims{w[0], w[1]}, out_dims{g.n, g.cout};
  in_dims.insert(in_dims.end(), v.in_sp.begin(), v.in_sp.end());
  w_dims.insert(w_dims.end(), v.k_sp.begin(), v.k_sp.end());
  out_dims.insert(out_dims.end(), v.out_sp.begin(), v.out_sp.end());
  const bool exact = dt == ir::DType::kFloat32 && ctx.sched.precision == "3xtf32";
  const std::string compute = dt == ir::DType::kFloat64 ? "CUDNN_DATA_DOUBLE" : "CUDNN_DATA_FLOAT";
  // The knob "engine_search" (the conv_engine_search skill): how many engines to time (checked by the
  // emitter before this is called).
  const int64_t search = ctx.kernel.knob(schedule::Knob::kEngineSearch, 0);
  std::ostringstream os;
  os << "// kf_cudnn_conv runs the cuDNN engine torch runs for this problem (its heuristics, order and filters)"
     << (channels_last ? ",\n// here for channels-last tensors, as torch runs a channels-last conv" : "") << ".\n"
     << "const KfCudnnConv kConv = {\n"
     << "    \"" << ctx.kernel.name << "\",\n"
     << "    " << (g.transpose ? 1 : 0) << ",  // backward_data"
     << (g.transpose ? ": the transposed conv is the input-gradient of conv(., w)" : ": forward") << "\n"
     << "    " << cudnn_type(dt) << ",  // data_type\n"
     << "    " << compute << ",  // compute_type\n"
     << "    " << (exact ? 1 : 0) << ",  // exact: "
     << (exact                       ? "precision 3xtf32, no tensor-core engines (torch with allow_tf32 = False)"
         : dt == ir::DType::kFloat32 ? "torch's default (allow_tf32 = True: TF32 engines allowed)"
                                     : "torch filters tensor-core engines only for fp32")
     << "\n"
     << "    0,  // deterministic: torch.backends.cudnn.deterministic = False\n"
     << "    " << in_dims.size() << ",  // nb_dims" << (g.sp == 1 ? ": the 1-d conv as 2-d with a unit height" : "")
     << "\n"
     << "    " << padded_list(in_dims, 5) << ",  // in_dims\n"
     << "    " << padded_list(w_dims, 5) << ",  // w_dims\n"
     << "    " << padded_list(out_dims, 5) << ",  // out_dims\n"
     << "    " << padded_list(v.pad, 3) << ",  // pad\n"
     << "    " << padded_list(v.stride, 3) << ",  // stride\n"
     << "    " << padded_list(v.dil, 3) << ",  // dilation\n"
     << "    " << (channels_last ? 1 : 0) << ",  // channels_last\n"
     << "    " << search << ",  // engine_search"
     << (search > 0 ? ": the fastest of this many engines, timed on the first call" : ": torch's engine") << "\n"
     << "};\n";
  return os.str();
}

}  // namespace conv

namespace {

std::string backend_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, bool has_bias,
                         int64_t& launches) {
  std::ostringstream os;
  os << "namespace {\n" << kconv_definition(ctx, g, false);
  if (has_bias) os << "\n" << bias_kernel(ctx, g, T, acc_type(ctx.out_type().dtype), true, false);
  os << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  const int rc = kf_cudnn_conv(ctx, &kConv, " << ctx.in_ptr(0) << ", " << ctx.in_ptr(1) << ", "
     << ctx.out_ptr() << ");\n"
     << "  if (rc != 0) return rc;\n";
  launches = 1;
  if (has_bias) {
    os << bias_launch(ctx, true);
    ++launches;
  }
  os << "  return 0;\n"
     << "}\n";
  return os.str();
}

const char* kCudnnPrelude =
    "#include <cudnn.h>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <mutex>\n\n"
    "#ifndef KF_CUDNN\n"
    "#define KF_CUDNN(call)                                                                            \\\n"
    "  do {                                                                                            \\\n"
    "    cudnnStatus_t kf_s_ = (call);                                                                 \\\n"
    "    if (kf_s_ != CUDNN_STATUS_SUCCESS)                                                            \\\n"
    "      return kf_fail(1, \"%s:%d: %s failed: %s\", __FILE__, __LINE__, #call, cudnnGetErrorString(kf_s_)); \\\n"
    "  } while (0)\n"
    "#endif\n";

// The cuDNN path: descriptors, algorithm choice and the per-chunk calls.
std::string cudnn_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, bool has_bias,
                       int64_t& launches) {
  const std::string name = ctx.kernel.name;
  const ir::DType dt = ctx.out_type().dtype;
  const std::string A = acc_type(dt);
  const CudnnView v = cudnn_view(g);
  const std::vector<int64_t>&pad = v.pad, &stride = v.stride, &dil = v.dil, &in_sp = v.in_sp, &out_sp = v.out_sp,
        &k_sp = v.k_sp;
  const size_t conv_dims = pad.size();
  const size_t nb_dims = conv_dims + 2;
  // Batch chunks of at most 2^31-1 elements per tensor.
  const int64_t per = std::max<int64_t>({g.in_sample, g.out_sample, 1});
  const int64_t chunk = std::min<int64_t>(g.n, INT_MAX / per);
  const int64_t full = g.n / chunk;
  const int64_t tail = g.n % chunk;
  std::string math = "CUDNN_DEFAULT_MATH";
  if (dt == ir::DType::kFloat16 || dt == ir::DType::kBFloat16) math = "CUDNN_TENSOR_OP_MATH";
  if (dt == ir::DType::kFloat32 && ctx.sched.precision == "3xtf32") math = "CUDNN_FMA_MATH";
  std::vector<int64_t> wdims(ctx.in_type(1).shape.begin(), ctx.in_type(1).shape.begin() + 2);
  wdims.insert(wdims.end(), k_sp.begin(), k_sp.end());
  std::vector<int64_t> xdims{g.cin}, ydims{g.cout};
  xdims.insert(xdims.end(), in_sp.begin(), in_sp.end());
  ydims.insert(ydims.end(), out_sp.begin(), out_sp.end());
  const std::string perf_t = g.transpose ? "cudnnConvolutionBwdDataAlgoPerf_t" : "cudnnConvolutionFwdAlgoPerf_t";
  const std::string algo_t = g.transpose ? "cudnnConvolutionBwdDataAlgo_t" : "cudnnConvolutionFwdAlgo_t";
  const std::string algo_count =
      g.transpose ? "CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT" : "CUDNN_CONVOLUTION_FWD_ALGO_COUNT";

  std::ostringstream os;
  os << "namespace {\n"
     << "constexpr cudnnDataType_t kType = " << cudnn_type(dt) << ";\n"
     << "constexpr cudnnDataType_t kCompute = "
     << (dt == ir::DType::kFloat64 ? "CUDNN_DATA_DOUBLE" : "CUDNN_DATA_FLOAT") << ";\n"
     << "// "
     << (math == "CUDNN_DEFAULT_MATH" ? "torch's math type for fp32 convs with allow_tf32 (TF32 tensor cores allowed)"
         : math == "CUDNN_FMA_MATH"   ? "precision 3xtf32: exact fp32 FMA kernels"
                                      : "torch's math type for 16-bit convs")
     << "\n"
     << "constexpr cudnnMathType_t kMath = " << math << ";\n"
     << "constexpr int kConvDims = " << conv_dims << ";\n"
     << "constexpr int kNbDims = " << nb_dims << ";\n"
     << "const int kPad[kConvDims] = " << int_list(pad) << ";\n"
     << "const int kStride[kConvDims] = " << int_list(stride) << ";\n"
     << "const int kDilation[kConvDims] = " << int_list(dil) << ";\n"
     << "const int kWeightDims[kNbDims] = " << int_list(wdims) << ";\n"
     << "const int kXDims[kNbDims - 1] = " << int_list(xdims) << ";  // per sample: channels, spatial\n"
     << "const int kYDims[kNbDims - 1] = " << int_list(ydims) << ";\n"
     << "constexpr int64_t kChunk = " << chunk << ";  // samples per cuDNN call (tensors under 2^31 elements)\n"
     << "constexpr int64_t kFullChunks = " << full << ";\n"
     << "constexpr int64_t kTail = " << tail << ";\n\n"
     << "struct Plan {\n"
     << "  bool ready = false;\n"
     << "  cudnnTensorDescriptor_t x = nullptr;  // the input" << (g.transpose ? " (cuDNN's dy)" : "") << "\n"
     << "  cudnnTensorDescriptor_t y = nullptr;  // the output" << (g.transpose ? " (cuDNN's dx)" : "") << "\n"
     << "  cudnnFilterDescriptor_t w = nullptr;\n"
     << "  cudnnConvolutionDescriptor_t conv = nullptr;\n"
     << "  " << algo_t << " algo{};\n"
     << "  size_t workspace = 0;\n"
     << "};\n"
     << "// Per device: [0] for full chunks, [1] for the tail chunk.\n"
     << "Plan g_plans[64][2];\n"
     << "std::mutex g_mu;\n\n"
     << "int set_tensor(cudnnTensorDescriptor_t d, int n, const int* per_sample) {\n"
     << "  int dims[kNbDims], strides[kNbDims];\n"
     << "  dims[0] = n;\n"
     << "  for (int i = 1; i < kNbDims; ++i) dims[i] = per_sample[i - 1];\n"
     << "  strides[kNbDims - 1] = 1;\n"
     << "  for (int i = kNbDims - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];\n"
     << "  KF_CUDNN(cudnnSetTensorNdDescriptor(d, kType, kNbDims, dims, strides));\n"
     << "  return 0;\n"
     << "}\n\n"
     << "// Descriptors for chunks of n samples and the algorithm (timed once, or heuristic under capture).\n"
     << "int make_plan(cudnnHandle_t h, KfContext* ctx, Plan& p, int n, const " << T << "* x, const " << T << "* w, "
     << T << "* y) {\n"
     << "  if (p.x == nullptr) KF_CUDNN(cudnnCreateTensorDescriptor(&p.x));\n"
     << "  if (p.y == nullptr) KF_CUDNN(cudnnCreateTensorDescriptor(&p.y));\n"
     << "  if (p.w == nullptr) KF_CUDNN(cudnnCreateFilterDescriptor(&p.w));\n"
     << "  if (p.conv == nullptr) KF_CUDNN(cudnnCreateConvolutionDescriptor(&p.conv));\n"
     << "  int rc = set_tensor(p.x, n, kXDims);\n"
     << "  if (rc != 0) return rc;\n"
     << "  if ((rc = set_tensor(p.y, n, kYDims)) != 0) return rc;\n"
     << "  KF_CUDNN(cudnnSetFilterNdDescriptor(p.w, kType, CUDNN_TENSOR_NCHW, kNbDims, kWeightDims));\n"
     << "  KF_CUDNN(cudnnSetConvolutionNdDescriptor(p.conv, kConvDims, kPad, kStride, kDilation, "
        "CUDNN_CROSS_CORRELATION, kCompute));\n"
     << "  KF_CUDNN(cudnnSetConvolutionGroupCount(p.conv, " << g.groups << "));\n"
     << "  KF_CUDNN(cudnnSetConvolutionMathType(p.conv, kMath));\n"
     << "  " << perf_t << " perf[" << algo_count << "];\n"
     << "  int returned = 0;\n"
     << "  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;\n"
     << "  KF_CUDA(cudaStreamIsCapturing(ctx->stream, &capture));\n"
     << "  if (capture == cudaStreamCaptureStatusNone) {\n";
  if (g.transpose) {
    os << "    KF_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w, w, p.x, x, p.conv, p.y, y, " << algo_count
       << ", &returned, perf, ctx->workspace, ctx->workspace_bytes));\n"
       << "  } else {\n"
       << "    KF_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w, p.x, p.conv, p.y, " << algo_count
       << ", &returned, perf));\n";
  } else {
    os << "    KF_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(h, p.x, x, p.w, w, p.conv, p.y, y, " << algo_count
       << ", &returned, perf, ctx->workspace, ctx->workspace_bytes));\n"
       << "  } else {\n"
       << "    KF_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, p.x, p.w, p.conv, p.y, " << algo_count
       << ", &returned, perf));\n";
  }
  os << "  }\n"
     << "  for (int i = 0; i < returned; ++i) {\n"
     << "    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx->workspace_bytes) continue;\n"
     << "    // Never fp16 down-conversion of fp32/fp64 data; no tensor cores when exact fp32 is asked for.\n"
     << "    if (perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && kType != CUDNN_DATA_HALF) continue;\n"
     << "    if (kMath == CUDNN_FMA_MATH && perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;\n"
     << "    KF_CUDNN(cudnnSetConvolutionMathType(p.conv, kMath == CUDNN_FMA_MATH ? kMath : perf[i].mathType));\n"
     << "    p.algo = perf[i].algo;\n"
     << "    p.workspace = perf[i].memory;\n"
     << "    p.ready = true;\n"
     << "    return 0;\n"
     << "  }\n"
     << "  return kf_fail(3, \"" << name
     << ": cuDNN offers no algorithm for this convolution within the %zu-byte workspace (%d tried)\", "
        "ctx->workspace_bytes, returned);\n"
     << "}\n\n"
     << "int run_chunk(cudnnHandle_t h, KfContext* ctx, Plan& p, int n, const " << T << "* x, const " << T << "* w, "
     << T << "* y) {\n"
     << "  if (!p.ready) {\n"
     << "    const int rc = make_plan(h, ctx, p, n, x, w, y);\n"
     << "    if (rc != 0) return rc;\n"
     << "  }\n"
     << "  if (p.workspace > ctx->workspace_bytes) return kf_fail(2, \"" << name
     << ": the cuDNN algorithm needs %zu bytes of workspace, %zu given\", p.workspace, ctx->workspace_bytes);\n"
     << "  const " << A << " one = 1, zero = 0;\n";
  if (g.transpose) {
    os << "  KF_CUDNN(cudnnConvolutionBackwardData(h, &one, p.w, w, p.x, x, p.conv, p.algo, ctx->workspace, "
          "p.workspace, &zero, p.y, y));\n";
  } else {
    os << "  KF_CUDNN(cudnnConvolutionForward(h, &one, p.x, x, p.w, w, p.conv, p.algo, ctx->workspace, p.workspace, "
          "&zero, p.y, y));\n";
  }
  os << "  return 0;\n"
     << "}\n";
  if (has_bias) os << "\n" << bias_kernel(ctx, g, T, A, true, false);
  os << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  cudnnHandle_t h = static_cast<cudnnHandle_t>(kf_cudnn_handle(ctx));\n"
     << "  if (h == nullptr) return kf_fail(1, \"" << name << ": no cuDNN handle for device %d\", ctx->device);\n"
     << "  if (ctx->device < 0 || ctx->device >= 64) return kf_fail(1, \"" << name
     << ": device %d is out of range\", ctx->device);\n"
     << "  const " << T << "* x = " << ctx.in_ptr(0) << ";\n"
     << "  const " << T << "* w = " << ctx.in_ptr(1) << ";\n"
     << "  " << T << "* y = " << ctx.out_ptr() << ";\n"
     << "  std::lock_guard<std::mutex> lock(g_mu);\n"
     << "  Plan* plans = g_plans[ctx->device];\n"
     << "  for (int64_t c = 0; c < kFullChunks; ++c) {\n"
     << "    const int rc = run_chunk(h, ctx, plans[0], (int)kChunk, x + c * kChunk * " << g.in_sample
     << "LL, w, y + c * kChunk * " << g.out_sample << "LL);\n"
     << "    if (rc != 0) return rc;\n"
     << "  }\n"
     << "  if (kTail > 0) {\n"
     << "    const int rc = run_chunk(h, ctx, plans[1], (int)kTail, x + kFullChunks * kChunk * " << g.in_sample
     << "LL, w, y + kFullChunks * kChunk * " << g.out_sample << "LL);\n"
     << "    if (rc != 0) return rc;\n"
     << "  }\n";
  launches = full + (tail > 0 ? 1 : 0);
  if (has_bias) {
    os << bias_launch(ctx, true);
    ++launches;
  }
  os << "  return 0;\n"
     << "}\n";
  return os.str();
}

}  // namespace

namespace conv {

// conv_common.h says what the arguments ask for.
StatusOr<KernelSource> emit_conv_family(const EmitContext& ctx, bool transpose, bool leave_bias, bool* bias_left,
                                        const ChannelsLastEpilogue* epi, bool* epilogue_fused,
                                        const ChannelsLastBackBuilder* back, bool* back_used) {
  const char* what = transpose ? "conv_transpose" : "conv";
  KF_ASSIGN_OR_RETURN(ConvGeom g, geometry(ctx, transpose));
  const ir::DType dt = ctx.out_type().dtype;
  const bool has_bias = ctx.has_input(2);
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i) {
    if (ctx.has_input(i) && ctx.in_type(i).dtype != dt) {
      return unsupported(std::string(what) + " with tensors of different dtypes; torch refuses them too");
    }
  }
  if (cudnn_type(dt).empty()) {
    return unsupported(std::string(what) + " on " + std::string(ir::dtype_name(dt)) +
                       " tensors: torch has no CUDA convolution for them, nor has kforge");
  }
  if (has_bias && ctx.in_type(2).numel() != g.cout)
    return invalid_argument(std::string(what) + ": the bias needs one value per output channel");
  const int64_t engine = ctx.kernel.knob(schedule::Knob::kEngine, kTorchEngine);
  if (engine != kTorchEngine && engine != kFindEngine) {
    return invalid_argument(std::string(what) +
                            ": the knob engine must be 0 (torch's cuDNN engine) or 1 (cudnnFind's "
                            "fastest), not " +
                            std::to_string(engine));
  }
  const int64_t channels_last = ctx.kernel.knob(schedule::Knob::kChannelsLast, 0);
  if (channels_last != 0 && channels_last != 1)
    return invalid_argument(std::string(what) + ": the knob channels_last must be 0 or 1, not " +
                            std::to_string(channels_last));
  const int64_t engine_search = ctx.kernel.knob(schedule::Knob::kEngineSearch, 0);
  if (engine_search < 0 || engine_search > kMaxEnginesTimed)
    return invalid_argument(std::string(what) + ": the knob engine_search must be 0 (torch's engine) to " +
                            std::to_string(kMaxEnginesTimed) + " (engines timed), not " +
                            std::to_string(engine_search));
  if (epilogue_fused != nullptr) *epilogue_fused = false;
  if (back_used != nullptr) *back_used = false;
  const std::string T = ctype(dt);
  const std::string A = acc_type(dt);
  const std::string headers = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

  if (ctx.out_type().numel() == 0) {
    KernelSource src = begin_source(ctx);
    src.code += "// the result is empty: nothing to compute\n" + ctx.signature() +
                " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
    src.launches = 0;
    return src;
  }
  if (g.cin_g == 0) {
    // No input channels per group: every output is the bias (or zero).
    KernelSource src = begin_source(ctx, headers);
    src.code += "namespace {\n" + bias_kernel(ctx, g, T, A, has_bias, true) + "}  // namespace\n\n" + ctx.signature() +
                " {\n  // Empty contraction (no input channels): the output is the bias, or zero.\n" +
                bias_launch(ctx, has_bias) + "  return 0;\n}\n";
    return src;
  }
  if (ctx.kernel.knob(schedule::Knob::kImplicitGemm, 0) != 0) {
    if (ctx.kernel.knob(schedule::Knob::kImplicitGemm, 0) != 1)
      return invalid_argument(std::string(what) + ": the knob implicit_gemm must be 0 or 1, not " +
                              std::to_string(ctx.kernel.knob(schedule::Knob::kImplicitGemm, 0)));
    if (const std::string why_not = implicit_gemm_reason(g, dt); !why_not.empty())
      return invalid_argument(std::string(what) + ": the knob implicit_gemm = 1 cannot apply: " + why_not);
    if (back != nullptr)
      return invalid_argument(std::string(what) +
                              ": the implicit GEMM has no channels-last result for a pass over it to read");
    KernelSource src = begin_source(ctx, headers);
    src.code += implicit_gemm_code(ctx, g, has_bias, epi);
    src.launches = 1;
    if (epilogue_fused != nullptr) *epilogue_fused = epi != nullptr;
    return src;
  }
  const std::string reason = direct_reason(ctx, g);
  if (!reason.empty()) {
    KernelSource src = begin_source(ctx, headers);
    int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
    src.code += "// Direct kernel, not cuDNN: " + reason + ".\nnamespace {\n" + direct_kernel(ctx, g, T, A, has_bias) +
                "}  // namespace\n\n" + ctx.signature() + " {\n  " + ctx.kernel.name + "_direct<<<kf_grid(" +
                std::to_string(ctx.out_type().numel()) + "LL, " + std::to_string(block) + "), " +
                std::to_string(block) + ", 0, ctx->stream>>>(" + ctx.in_ptr(0) + ", " + ctx.in_ptr(1) + ", " +
                (has_bias ? ctx.in_ptr(2) + ", " : "") + ctx.out_ptr() + ");\n  KF_LAUNCHED();\n  return 0;\n}\n";
    src.launches = 1;
    return src;
  }
  if (engine == kTorchEngine && is_depthwise(g) && dt != ir::DType::kFloat16) {
    KernelSource src = begin_source(ctx, headers);
    src.code += depthwise_code(ctx, g, T, A, has_bias);
    src.launches = 1;
    return src;
  }
  KernelSource src = begin_source(ctx, engine == kTorchEngine ? kBackendPrelude : kCudnnPrelude);
  src.libraries = {"cudnn"};
  const bool library_bias = has_bias && !leave_bias;
  if (bias_left != nullptr) *bias_left = has_bias && leave_bias;
  const int64_t io_mb = static_cast<int64_t>(ctx.in_type(0).bytes() + ctx.out_type().bytes()) >> 20;
  int64_t launches = 0;
  if (engine == kTorchEngine && channels_last == 1) {
    const std::string why_not = channels_last_reason(g, dt);
    if (!why_not.empty())
      return invalid_argument(std::string(what) + ": the knob channels_last = 1 cannot apply: " + why_not);
    // The bias (and the epilogue) go into the pass back to NCHW.
    if (bias_left != nullptr) *bias_left = false;
    if (epilogue_fused != nullptr) *epilogue_fused = epi != nullptr;
    src.workspace_bytes =
        channels_last_scratch(ctx) +
        (static_cast<size_t>(ctx.kernel.knob(schedule::Knob::kWorkspaceMb, std::clamp<int64_t>(io_mb, 256, 2048)))
         << 20);
    std::optional<conv::ChannelsLastBack> built;
    if (back != nullptr) {
      KF_ASSIGN_OR_RETURN(built, (*back)(g, has_bias ? ctx.in_ptr(2) : std::string()));
      if (back_used != nullptr) *back_used = true;
      if (epilogue_fused != nullptr) *epilogue_fused = false;
    }
    const ChannelsLastEpilogue* pass_epi = built ? built->transpose_with.get() : epi;
    src.code += channels_last_code(ctx, g, T, has_bias, pass_epi, built ? &*built : nullptr, launches);
  } else if (engine == kTorchEngine) {
    // Workspace: torch hands the heuristics' first engine whatever workspace it asks for, while
    // kf_cudnn_conv skips an engine whose workspace exceeds ours, and then no longer rounds like
    // torch. cuDNN's usual picks (implicit GEMM) need nothing to a few MiB; the engines that need
    // more (FFT tiling, split reductions, bwd-data accumulators) grow with the tensors. So reserve
    // the size of input plus output, at least 256 MiB and at most 2 GiB (attention's default
    // budget); the knob workspace_mb overrides it. KFORGE_CUDNN_LOG=1 reports skipped engines.
    src.workspace_bytes =
        static_cast<size_t>(ctx.kernel.knob(schedule::Knob::kWorkspaceMb, std::clamp<int64_t>(io_mb, 256, 2048))) << 20;
    src.code += backend_code(ctx, g, T, library_bias, launches);
  } else {
    // Workspace for cudnnFind: the knob workspace_mb, else the size of input and output (32 MiB ..
    // 512 MiB), enough for the implicit-GEMM and most FFT/Winograd choices.
    src.workspace_bytes =
        static_cast<size_t>(ctx.kernel.knob(schedule::Knob::kWorkspaceMb, std::clamp<int64_t>(io_mb, 32, 512))) << 20;
    src.code += cudnn_code(ctx, g, T, library_bias, launches);
  }
  src.launches = launches;
  return src;
}

}  // namespace conv

StatusOr<KernelSource> emit_Conv(const EmitContext& ctx) {
  return emit_conv_family(ctx, false);
}

StatusOr<KernelSource> emit_ConvTranspose(const EmitContext& ctx) {
  return emit_conv_family(ctx, true);
}

}  // namespace kforge::codegen
