// The channels-last layout (knob channels_last = 1, the conv_channels_last skill): cuDNN's engines for
// NHWC tensors run fp32 convs in TF32 1.3-2.1x faster than for NCHW ones on the H200 (bench/NOTES.md,
// run 6 probe), which is why torch.compile converts convs to channels-last. The program's tensors stay
// NCHW: the input and the weight are transposed into scratch (ctx->workspace), cuDNN writes a
// channels-last result there, and one pass transposes it back into the output, adding the bias and
// computing the epilogue's chain (conv_epilogue) on the way, so the output is written once.
// Both transposes go through 32x32 shared-memory tiles, so reads and writes are coalesced.

#include <algorithm>
#include <sstream>

#include "codegen/conv_common.h"

namespace kforge::codegen::conv {

namespace {

constexpr size_t kScratchAlign = 256;
size_t round_up(size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

const char* kToChannelsLast =
    "// [B][C][S] -> [B][S][C] in 32x32 tiles through shared memory: reads along S, writes along C.\n"
    "template <typename T>\n"
    "__global__ void __launch_bounds__(256) kf_to_channels_last(const T* __restrict__ src, T* __restrict__ dst,\n"
    "                                                           long long C, long long S, long long B) {\n"
    "  __shared__ T tile[32][33];\n"
    "  const long long s0 = (long long)blockIdx.x * 32, c0 = (long long)blockIdx.y * 32;\n"
    "  for (long long b = blockIdx.z; b < B; b += gridDim.z) {\n"
    "    const T* sb = src + b * C * S;\n"
    "    T* db = dst + b * C * S;\n"
    "    for (int j = threadIdx.y; j < 32; j += 8) {\n"
    "      const long long c = c0 + j, s = s0 + threadIdx.x;\n"
    "      if (c < C && s < S) tile[j][threadIdx.x] = sb[c * S + s];\n"
    "    }\n"
    "    __syncthreads();\n"
    "    for (int j = threadIdx.y; j < 32; j += 8) {\n"
    "      const long long s = s0 + j, c = c0 + threadIdx.x;\n"
    "      if (s < S && c < C) db[s * C + c] = tile[threadIdx.x][j];\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "}\n\n"
    "// The launch of one transpose: tiles over S (x) and C (y), batches over z (at most 65535, looped).\n"
    "template <typename T>\n"
    "void kf_launch_to_channels_last(const T* src, T* dst, long long C, long long S, long long B, cudaStream_t s) {\n"
    "  const dim3 grid((unsigned)((S + 31) / 32), (unsigned)((C + 31) / 32), (unsigned)(B < 65535 ? B : 65535));\n"
    "  kf_to_channels_last<T><<<grid, dim3(32, 8), 0, s>>>(src, dst, C, S, B);\n"
    "}\n";

}  // namespace

std::string channels_last_reason(const ConvGeom& g, ir::DType dt) {
  if (dt != ir::DType::kFloat32 && dt != ir::DType::kFloat16 && dt != ir::DType::kBFloat16)
    return "it is for float32, float16 and bfloat16 tensors";
  if (g.sp < 1 || g.sp > 3) return "cuDNN's channels-last convs have 1 to 3 spatial dims";
  if (std::max(g.cin, g.cout) > int64_t{65535} * 32) return "more channels than one grid dimension of tiles covers";
  return "";
}

size_t channels_last_scratch(const EmitContext& ctx) {
  return round_up(ctx.in_type(0).bytes()) + round_up(ctx.in_type(1).bytes()) + round_up(ctx.out_type().bytes());
}

std::string channels_last_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, bool has_bias,
                               const ChannelsLastEpilogue* epi, int64_t& launches) {
  const std::string name = ctx.kernel.name;
  const std::string A = acc_type(ctx.out_type().dtype);
  const ir::Shape& w = ctx.in_type(1).shape;
  const int64_t s_in = prod(g.in_sp), s_out = g.spatial_out, s_w = prod(g.k_sp);
  const size_t off_w = round_up(ctx.in_type(0).bytes());
  const size_t off_y = off_w + round_up(ctx.in_type(1).bytes());
  const size_t off_ws = off_y + round_up(ctx.out_type().bytes());
  const std::string OT = epi != nullptr ? ctype(epi->out_dtype) : T;
  std::ostringstream os;
  os << "namespace {\n" << kconv_definition(ctx, g, true) << "\n" << kToChannelsLast << "\n";
  if (epi != nullptr) os << epi->chain.code << "\n";
  // The way back: [N][S][C] -> [N][C][S], bias and chain applied at the NCHW index.
  os << "// The result back to NCHW (tiles: reads along C, writes along S)"
     << (has_bias ? ", the bias added (rounded to the tensor's type, as torch's separate add)" : "")
     << (epi != nullptr ? ", then the epilogue's chain" : "") << ".\n"
     << "__global__ void __launch_bounds__(256) " << name << "_from_channels_last(const " << T << "* __restrict__ ycl, "
     << (has_bias ? "const " + T + "* __restrict__ bias, " : "")
     << (epi != nullptr && !epi->chain.params.empty() ? epi->chain.params + ", " : "") << OT
     << "* __restrict__ out) {\n"
     << "  constexpr long long C = " << g.cout << "LL, S = " << s_out << "LL, N = " << g.n << "LL;\n"
     << "  __shared__ " << T << " tile[32][33];\n"
     << "  const long long s0 = (long long)blockIdx.x * 32, c0 = (long long)blockIdx.y * 32;\n"
     << "  for (long long n = blockIdx.z; n < N; n += gridDim.z) {\n"
     << "    for (int j = threadIdx.y; j < 32; j += 8) {\n"
     << "      const long long s = s0 + j, c = c0 + threadIdx.x;\n"
     << "      if (s < S && c < C) tile[j][threadIdx.x] = ycl[(n * S + s) * C + c];\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    for (int j = threadIdx.y; j < 32; j += 8) {\n"
     << "      const long long c = c0 + j, s = s0 + threadIdx.x;\n"
     << "      if (c < C && s < S) {\n"
     << "        const long long i = (n * C + c) * S + s;\n"
     << "        (void)i;\n"
     << "        const " << T << " v = "
     << (has_bias ? "(" + T + ")((" + A + ")tile[threadIdx.x][j] + (" + A + ")bias[c])" : "tile[threadIdx.x][j]")
     << ";\n"
     << "        out[i] = "
     << (epi != nullptr ? epi->name + "(i, v" + (epi->chain.call_args.empty() ? "" : ", " + epi->chain.call_args) + ")"
                        : "v")
     << ";\n"
     << "      }\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  // Scratch: the input, the weight and the result in channels-last order, then cuDNN's workspace.\n"
     << "  if (ctx->workspace_bytes < " << off_ws << "ULL) return kf_fail(2, \"" << name
     << ": the channels-last copies need " << off_ws << " bytes of scratch, %zu given\", ctx->workspace_bytes);\n"
     << "  char* scratch = static_cast<char*>(ctx->workspace);\n"
     << "  " << T << "* xcl = reinterpret_cast<" << T << "*>(scratch);\n"
     << "  " << T << "* wcl = reinterpret_cast<" << T << "*>(scratch + " << off_w << "ULL);\n"
     << "  " << T << "* ycl = reinterpret_cast<" << T << "*>(scratch + " << off_y << "ULL);\n"
     << "  kf_launch_to_channels_last<" << T << ">(" << ctx.in_ptr(0) << ", xcl, " << g.cin << "LL, " << s_in << "LL, "
     << g.n << "LL, ctx->stream);\n"
     << "  KF_LAUNCHED();\n"
     << "  kf_launch_to_channels_last<" << T << ">(" << ctx.in_ptr(1) << ", wcl, " << w[1] << "LL, " << s_w << "LL, "
     << w[0] << "LL, ctx->stream);\n"
     << "  KF_LAUNCHED();\n"
     << "  KfContext conv_ctx = *ctx;\n"
     << "  conv_ctx.workspace = scratch + " << off_ws << "ULL;\n"
     << "  conv_ctx.workspace_bytes = ctx->workspace_bytes - " << off_ws << "ULL;\n"
     << "  const int rc = kf_cudnn_conv(&conv_ctx, &kConv, xcl, wcl, ycl);\n"
     << "  if (rc != 0) return rc;\n"
     << "  const dim3 grid(" << (s_out + 31) / 32 << "u, " << (g.cout + 31) / 32 << "u, "
     << std::min<int64_t>(g.n, 65535) << "u);\n"
     << "  " << name << "_from_channels_last<<<grid, dim3(32, 8), 0, ctx->stream>>>(ycl, "
     << (has_bias ? ctx.in_ptr(2) + ", " : "")
     << (epi != nullptr && !epi->chain.host_args.empty() ? epi->chain.host_args + ", " : "") << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  launches = 4;
  return os.str();
}

}  // namespace kforge::codegen::conv
