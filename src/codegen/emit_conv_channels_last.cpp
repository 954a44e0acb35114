// The channels-last layout (knob channels_last = 1, the conv_channels_last skill): cuDNN's engines for
// NHWC tensors run fp32 convs in TF32 1.3-2.1x faster than for NCHW ones on the H200 (bench/NOTES.md,
// run 6 probe), which is why torch.compile converts convs to channels-last. The program's tensors stay
// NCHW: the input and the weight are transposed into scratch (ctx->workspace), cuDNN writes a
// channels-last result there, and one pass transposes it back into the output, adding the bias and
// computing the epilogue's chain (conv_epilogue) on the way, so the output is written once.
// Both transposes go through shared-memory tiles, so reads and writes are coalesced: for fp32 with
// channel and position counts that are multiples of 4, tiles of 32 channels x 128 positions moved 16
// bytes at a time (the first version's 32x32 scalar tiles ran at half the rate of Inductor's
// transposes on the H200, bench/NOTES.md run 7); few input channels (an image's 3) go by a gather.

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
    "// [B][C][S] -> [B][S][C]. Three kernels, chosen at launch:\n"
    "//  - float with C and S multiples of 4 (16-byte aligned), C >= 16: tiles of 32 channels x 128\n"
    "//    positions through shared memory, 16-byte loads along S and stores along C, 4 of each per thread;\n"
    "//    the stores streaming (evict-first): 4.0 TB/s against 3.2 with plain stores on the H200\n"
    "//    (bench/micro/transpose_variants.cu);\n"
    "//  - C < 16 (e.g. an image's 3 channels, where a 32-channel tile would be mostly empty): one thread\n"
    "//    per output element, 4 per thread in flight, writes coalesced, reads from C streams;\n"
    "//  - otherwise 32x32 scalar tiles.\n"
    "// The row stride of the tiles is 129 floats: both the writes and the reads of a warp hit 32 banks.\n"
    "__global__ void __launch_bounds__(256) kf_to_channels_last_x4(const float* __restrict__ src,\n"
    "                                                              float* __restrict__ dst, long long C,\n"
    "                                                              long long S, long long B) {\n"
    "  __shared__ float tile[32][129];\n"
    "  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32;\n"
    "  const int row = threadIdx.x >> 3, chunk = threadIdx.x & 7;  // loads: channel row, 4-position chunk\n"
    "  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;    // stores: 4-channel quad, position\n"
    "  for (long long b = blockIdx.z; b < B; b += gridDim.z) {\n"
    "    const float* sb = src + (b * C + c0) * S + s0;\n"
    "    float* db = dst + (b * S + s0) * C + c0;\n"
    "    float4 v[4];\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < 4; ++k) {\n"
    "      const int s = 32 * k + 4 * chunk;\n"
    "      if (c0 + row < C && s0 + s < S) v[k] = *reinterpret_cast<const float4*>(sb + row * S + s);\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < 4; ++k) {\n"
    "      const int s = 32 * k + 4 * chunk;\n"
    "      tile[row][s] = v[k].x;\n"
    "      tile[row][s + 1] = v[k].y;\n"
    "      tile[row][s + 2] = v[k].z;\n"
    "      tile[row][s + 3] = v[k].w;\n"
    "    }\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 4; ++r) {\n"
    "      const int s = pos + 32 * r;\n"
    "      if (s0 + s < S && c0 + 4 * quad < C) {\n"
    "        const float4 o = make_float4(tile[4 * quad][s], tile[4 * quad + 1][s], tile[4 * quad + 2][s],\n"
    "                                     tile[4 * quad + 3][s]);\n"
    "        __stcs(reinterpret_cast<float4*>(db + s * C + 4 * quad), o);  // streaming: 0.336 -> 0.266 ms\n"
    "      }\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "}\n\n"
    "template <typename T, typename I>\n"
    "__global__ void __launch_bounds__(256) kf_to_channels_last_gather(const T* __restrict__ src, T* __restrict__ "
    "dst,\n"
    "                                                                  I C, I S, I total) {\n"
    "  const I step = (I)gridDim.x * blockDim.x;\n"
    "  for (I o0 = (I)blockIdx.x * blockDim.x + threadIdx.x; o0 < total; o0 += 4 * step) {\n"
    "    T v[4];\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < 4; ++k) {\n"
    "      const I o = o0 + k * step;\n"
    "      if (o < total) {\n"
    "        const I c = o % C, bs = o / C;\n"
    "        v[k] = src[(bs / S * C + c) * S + bs % S];\n"
    "      }\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < 4; ++k) {\n"
    "      const I o = o0 + k * step;\n"
    "      if (o < total) dst[o] = v[k];\n"
    "    }\n"
    "  }\n"
    "}\n\n"
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
    "// The launch of one transpose (batches over grid z, at most 65535, looped).\n"
    "template <typename T>\n"
    "void kf_launch_to_channels_last(const T* src, T* dst, long long C, long long S, long long B, cudaStream_t s) {\n"
    "  const unsigned z = (unsigned)(B < 65535 ? B : 65535);\n"
    "  const bool aligned = ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16) == 0;\n"
    "  if (sizeof(T) == 4 && C % 4 == 0 && S % 4 == 0 && C >= 16 && aligned) {\n"
    "    const dim3 grid((unsigned)((S + 127) / 128), (unsigned)((C + 31) / 32), z);\n"
    "    kf_to_channels_last_x4<<<grid, 256, 0, s>>>(reinterpret_cast<const float*>(src), "
    "reinterpret_cast<float*>(dst),\n"
    "                                               C, S, B);\n"
    "  } else if (C < 16) {\n"
    "    const long long total = C * S * B;\n"
    "    const unsigned grid = kf_grid((total + 3) / 4, 256);  // 4 elements per thread in flight\n"
    "    if (total < (1LL << 31)) {\n"
    "      kf_to_channels_last_gather<T, unsigned><<<grid, 256, 0, s>>>(src, dst, (unsigned)C, (unsigned)S, "
    "(unsigned)total);\n"
    "    } else {\n"
    "      kf_to_channels_last_gather<T, long long><<<grid, 256, 0, s>>>(src, dst, C, S, total);\n"
    "    }\n"
    "  } else {\n"
    "    const dim3 grid((unsigned)((S + 31) / 32), (unsigned)((C + 31) / 32), z);\n"
    "    kf_to_channels_last<T><<<grid, dim3(32, 8), 0, s>>>(src, dst, C, S, B);\n"
    "  }\n"
    "}\n";

// The pass back's 16-byte loads of 128 positions x 32 channels of sample n into tile[channel][position]
// (both 16-byte forms of the pass back share them).
const char* kLoadTileFromChannelsLast =
    "    const float* yb = ycl + (n * S + s0) * C + c0;\n"
    "    float4 v[4];\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 4; ++r) {\n"
    "      const int s = pos + 32 * r;\n"
    "      if (s0 + s < S && c0 + 4 * quad < C) v[r] = *reinterpret_cast<const float4*>(yb + s * C + 4 * quad);\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 4; ++r) {\n"
    "      const int s = pos + 32 * r;\n"
    "      tile[4 * quad][s] = v[r].x;\n"
    "      tile[4 * quad + 1][s] = v[r].y;\n"
    "      tile[4 * quad + 2][s] = v[r].z;\n"
    "      tile[4 * quad + 3][s] = v[r].w;\n"
    "    }\n"
    "    __syncthreads();\n";

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
                               const ChannelsLastEpilogue* epi, const ChannelsLastBack* back, int64_t& launches) {
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
  const std::string params =
      std::string("(const ") + T + "* __restrict__ ycl, " + (has_bias ? "const " + T + "* __restrict__ bias, " : "") +
      (epi != nullptr && !epi->chain.params.empty() ? epi->chain.params + ", " : "") + OT + "* __restrict__ out)";
  // The output element at NCHW index i from the conv's value `tv` (of channel c). A chain that reads
  // per-channel operands at the row's first index (row_extent: the plane) gets it as i_row, so that a
  // thread's values of one plane share their loads.
  const bool row_indexed = epi != nullptr && epi->chain.row_extent == s_out;
  auto value_at = [&](const std::string& tv) {
    const std::string v = has_bias ? "(" + T + ")((" + A + ")" + tv + " + (" + A + ")bias[c])" : tv;
    return epi != nullptr ? epi->name + "(i, " + v + (epi->chain.call_args.empty() ? "" : ", " + epi->chain.call_args) +
                                (row_indexed ? ", (n * C + c) * S" : "") + ")"
                          : v;
  };
  const std::string what = std::string(has_bias ? ", the bias added (rounded to the tensor's type, as torch's "
                                                  "separate add)"
                                                : "") +
                           (epi != nullptr ? ", then the epilogue's chain" : "");
  // The 16-byte form (fp32 in and out, C and S multiples of 4, C >= 16): tiles of 32 channels x 128
  // positions, loads along C and stores along S 16 bytes wide, 4 of each per thread; the tile's row
  // stride of 129 floats keeps a warp's shared-memory writes and reads on 32 banks.
  // `back` replaces the transpose, unless it asks for the transpose after it (transpose_with).
  const bool replaced = back != nullptr && back->transpose_with == nullptr;
  const bool vec_loads = !replaced && T == "float" && OT == "float" && g.cout % 4 == 0 && g.cout >= 16;
  const bool vector = vec_loads && s_out % 4 == 0;
  if (back != nullptr) os << back->device;
  // Positions not a multiple of 4 (rows of the NCHW output not 16-byte aligned): the same 16-byte loads,
  // then each warp writes one channel's 32 consecutive positions with scalar stores (128 contiguous
  // bytes per store instruction); the 32x32 scalar tiles ran level2/5's 513 x 513 planes at 2 TB/s.
  // Each value is computed under its bounds check: the 16-byte form's order (a row's values first, at
  // clamped positions, then the stores) ran this kernel in 1.57 ms on level2/5 against ~1.27 for this
  // one (bench/NOTES.md run 13), though bench/micro/pass_back_chain.cu timed it faster; not explained.
  if (vec_loads && !vector) {
    os << "// The result back to NCHW: 16-byte loads along C, coalesced scalar stores along S" << what << ".\n"
       << "__global__ void __launch_bounds__(256) " << name << "_from_channels_last_x4s" << params << " {\n"
       << "  constexpr long long C = " << g.cout << "LL, S = " << s_out << "LL, N = " << g.n << "LL;\n"
       << "  __shared__ float tile[32][129];\n"
       << "  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32;\n"
       << "  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;  // loads: 4-channel quad, position\n"
       << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;  // stores: position, channel\n"
       << "  for (long long n = blockIdx.z; n < N; n += gridDim.z) {\n"
       << kLoadTileFromChannelsLast << "#pragma unroll\n"
       << "    for (int j = 0; j < 4; ++j) {\n"
       << "      const int row = warp + 8 * j;\n"
       << "      const long long c = c0 + row;\n"
       << "#pragma unroll\n"
       << "      for (int k = 0; k < 4; ++k) {\n"
       << "        const int s = lane + 32 * k;\n"
       << "        if (c < C && s0 + s < S) {\n"
       << "          const long long i = (n * C + c) * S + s0 + s;\n"
       << "          __stcs(out + i, " << value_at("tile[row][s]") << ");\n"
       << "        }\n"
       << "      }\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "  }\n"
       << "}\n";
  }
  if (vector) {
    os << "// The result back to NCHW, 16 bytes wide" << what << ".\n"
       << "__global__ void __launch_bounds__(256) " << name << "_from_channels_last_x4" << params << " {\n"
       << "  constexpr long long C = " << g.cout << "LL, S = " << s_out << "LL, N = " << g.n << "LL;\n"
       << "  __shared__ float tile[32][129];\n"
       << "  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32;\n"
       << "  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;    // loads: 4-channel quad, position\n"
       << "  const int row = threadIdx.x >> 3, chunk = threadIdx.x & 7;  // stores: channel row, 4-position chunk\n"
       << "  for (long long n = blockIdx.z; n < N; n += gridDim.z) {\n"
       << kLoadTileFromChannelsLast
       << "    float4 o[4];  // the thread's 16 values of one plane first, then its stores: loads shared by the\n"
       << "                  // plane (bias, per-channel operands) stay one\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < 4; ++k) {\n"
       << "      // Computed unguarded at positions clamped into the tile (S % 4 == 0: a whole quad; a duplicate\n"
       << "      // where out of range, not stored), so that no branch keeps a shared load per quad.\n"
       << "      const int s = (int)min((long long)(32 * k + 4 * chunk), S - 4 - s0);\n"
       << "      const long long c = min(c0 + row, C - 1);\n"
       << "      float* vo = reinterpret_cast<float*>(&o[k]);\n"
       << "#pragma unroll\n"
       << "      for (int l = 0; l < 4; ++l) {\n"
       << "        const long long i = (n * C + c) * S + s0 + s + l;\n"
       << "        (void)i;\n"
       << "        vo[l] = " << value_at("tile[c - c0][s + l]") << ";\n"
       << "      }\n"
       << "    }\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < 4; ++k) {\n"
       << "      const int s = 32 * k + 4 * chunk;\n"
       << "      if (c0 + row < C && s0 + s < S)\n"
       << "        __stcs(reinterpret_cast<float4*>(out + (n * C + c0 + row) * S + s0 + s), o[k]);\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "  }\n"
       << "}\n";
  }
  if (!replaced && (vector || !vec_loads)) {
    os << "// The result back to NCHW (32x32 tiles: reads along C, writes along S)" << what << ".\n"
       << "__global__ void __launch_bounds__(256) " << name << "_from_channels_last" << params << " {\n"
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
       << "        out[i] = " << value_at("tile[threadIdx.x][j]") << ";\n"
       << "      }\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "  }\n"
       << "}\n";
  }
  os << "}  // namespace\n\n"
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
     << "  const unsigned batches = " << std::min<int64_t>(g.n, 65535) << "u;\n";
  if (replaced) {
    os << back->host << "  return 0;\n"
       << "}\n";
    launches = 3 + back->launches;
    return os.str();
  }
  if (back != nullptr) os << back->host;
  const std::string back_args = "(ycl, " + (has_bias ? ctx.in_ptr(2) + ", " : "") +
                                (epi != nullptr && !epi->chain.host_args.empty() ? epi->chain.host_args + ", " : "") +
                                ctx.out_ptr() + ");\n";
  if (vector) {
    os << "  if (reinterpret_cast<uintptr_t>(" << ctx.out_ptr() << ") % 16 == 0) {\n"
       << "    " << name << "_from_channels_last_x4<<<dim3(" << (s_out + 127) / 128 << "u, " << (g.cout + 31) / 32
       << "u, batches), 256, 0, ctx->stream>>>" << back_args << "  } else {\n  ";
  }
  if (vec_loads && !vector) {
    os << "  " << name << "_from_channels_last_x4s<<<dim3(" << (s_out + 127) / 128 << "u, " << (g.cout + 31) / 32
       << "u, batches), 256, 0, ctx->stream>>>" << back_args;
  } else {
    os << "  " << name << "_from_channels_last<<<dim3(" << (s_out + 31) / 32 << "u, " << (g.cout + 31) / 32
       << "u, batches), dim3(32, 8), 0, ctx->stream>>>" << back_args;
  }
  if (vector) os << "  }\n";
  os << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  launches = 4 + (back != nullptr ? back->launches : 0);
  return os.str();
}

}  // namespace kforge::codegen::conv
