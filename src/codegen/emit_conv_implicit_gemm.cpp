// kforge's own convolution for a small reduction (the conv_implicit_gemm skill, knob implicit_gemm = 1): a
// float32 2-d convolution as an implicit GEMM on TF32 tensor cores (mma.sync m16n8k8), reading the NCHW
// input and writing the NCHW result once, the bias and the conv_epilogue chain applied on the way out.
//
// Why: with C_in * kh * kw small (level 2's 8-channel 3x3 convs: 72), the convolution is a write of its
// result; cuDNN's channels-last engine plus the transposes around it read and write that result twice
// more, and its NCHW engine is slower still.
//
// Design (one block of 256 threads = 8 warps per tile, persistent blocks looping over tiles):
//  - a tile is one output row segment: sample n, row p, kBQ = 128 consecutive columns, all C_out channels;
//  - the weights, rounded to TF32, sit in shared memory for the whole kernel as the GEMM's B [k][c_out]
//    (k = (ci, r, s), torch's weight order), k padded to a multiple of 8 with zeros;
//  - the tile's input window (C_in x kh rows of the columns it reads), rounded to TF32, is staged in
//    shared memory; A[m][k] = window[ci][r][m * stride + s * dilation] is read from there (implicit
//    im2col); the next tile's window is loaded into registers while this tile's results are stored;
//  - warp w computes positions 16w .. 16w + 15 against every channel (C_out / 8 mma tiles), fp32 accumulate;
//  - the accumulators go through shared memory ([c_out][position], over the window once every warp has
//    read it) so that each warp then writes one channel's consecutive positions: coalesced NCHW stores,
//    each value through bias and chain.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "codegen/conv_common.h"

namespace kforge::codegen::conv {

std::string implicit_gemm_reason(const ConvGeom& g, ir::DType dt) {
  if (dt != ir::DType::kFloat32) return "TF32 tensor cores take float32 tensors";
  if (g.transpose) return "a transposed convolution";
  if (g.sp != 2) return "not a 2-d convolution";
  if (g.groups != 1) return "grouped";
  if (g.out_sp[0] < 1 || g.out_sp[1] < 1) return "empty";
  return kernels::implicit_gemm_shape_illegal({.cin = g.cin,
                                               .cout = g.cout,
                                               .kh = g.k_sp[0],
                                               .kw = g.k_sp[1],
                                               .stride_w = g.stride[1],
                                               .dilation_w = g.dil[1],
                                               .in_plane = prod(g.in_sp),
                                               .out_plane = g.spatial_out});
}

std::string implicit_gemm_code(const EmitContext& ctx, const ConvGeom& g, bool has_bias,
                               const ChannelsLastEpilogue* epi) {
  const std::string name = ctx.kernel.name;
  const std::string OT = epi != nullptr ? ctype(epi->out_dtype) : "float";
  const int64_t bq = 128;
  const int64_t iw = (bq - 1) * g.stride[1] + (g.k_sp[1] - 1) * g.dil[1] + 1;  // input columns per tile
  const int64_t ld_in = iw + ((16 - iw % 32) + 32) % 32;                       // == 16 mod 32: see below
  const int64_t ld_w = g.cout + ((8 - g.cout % 32) + 32) % 32;                 // == 8 mod 32
  const int64_t ld_out = bq + 4;                                               // == 4 mod 32
  const int64_t ksteps = (g.cin * prod(g.k_sp) + 7) / 8;
  // The window and the tile's results share their shared memory (the results are written once the mma
  // has read the window), so that 4 blocks fit on an SM at 8 input channels; the kernel's static_assert
  // checks this size against its own layout.
  const int64_t smem_bytes =
      kernels::implicit_gemm_smem_bytes(g.cin, g.cout, g.k_sp[0], g.k_sp[1], g.stride[1], g.dil[1]);
  // Blocks per SM the registers are bounded for: as many as the H200's 228 KiB of shared memory hold
  // (1 KiB each reserved), at most 4 (64 registers a thread: no spills at 64 channels).
  const int64_t min_blocks = std::clamp<int64_t>((228 << 10) / (smem_bytes + 1024), 1, 4);
  const int64_t plane = g.out_sp[0] * g.out_sp[1];
  const bool row_indexed = epi != nullptr && epi->chain.row_extent == plane;
  std::ostringstream os;
  os << "namespace {\n";
  if (epi != nullptr) os << epi->chain.code << "\n";
  os << "// " << g.n << " x " << g.cin << " x " << g.in_sp[0] << " x " << g.in_sp[1] << " input, " << g.cout << " x "
     << g.cin << " x " << g.k_sp[0] << " x " << g.k_sp[1] << " weight, " << g.out_sp[0] << " x " << g.out_sp[1]
     << " output planes.\n"
     << "constexpr int kN = " << g.n << ", kCin = " << g.cin << ", kH = " << g.in_sp[0] << ", kW = " << g.in_sp[1]
     << ", kCout = " << g.cout << ";\n"
     << "constexpr int kR = " << g.k_sp[0] << ", kS = " << g.k_sp[1] << ", kP = " << g.out_sp[0]
     << ", kQ = " << g.out_sp[1] << ";\n"
     << "constexpr int kStrH = " << g.stride[0] << ", kStrW = " << g.stride[1] << ", kPadH = " << g.pad[0]
     << ", kPadW = " << g.pad[1] << ", kDilH = " << g.dil[0] << ", kDilW = " << g.dil[1] << ";\n"
     << "constexpr int kK = kCin * kR * kS, kKSteps = " << ksteps << ";  // reduction, in steps of 8\n"
     << "constexpr int kBQ = " << bq << ", kQTiles = (kQ + kBQ - 1) / kBQ;  // positions per tile, tiles per row\n"
     << "constexpr long long kTiles = (long long)kN * kP * kQTiles;\n"
     << "constexpr int kIW = " << iw << ", kInRows = kCin * kR;  // the window a tile reads\n"
     << "// Row strides (floats) that keep a warp's shared-memory accesses on distinct banks: the window's\n"
     << "// (== 16 mod 32: a step to the next kernel row moves 16 banks), the weights' (== 8: lanes t, g at\n"
     << "// 8t + g) and the results' (== 4: channels 2t at 8t).\n"
     << "constexpr int kLdIn = " << ld_in << ", kLdW = " << ld_w << ", kLdOut = " << ld_out << ";\n"
     << "// The window's rows, then a row of zeros that A's padded columns (k >= kK) read: weights there are\n"
     << "// zero, and so must the products be (an input's inf or NaN times zero is not).\n"
     << "constexpr int kZeroRow = kInRows * kLdIn, kInFloats = kZeroRow + (kBQ - 1) * kStrW + 1;\n"
     << "constexpr int kWFloats = kKSteps * 8 * kLdW;\n"
     << "// The window's loads: warp w takes rows w, w + 8, ..., its lanes the columns lane + 32 u.\n"
     << "constexpr int kRowIters = (kInRows + 7) / 8, kColIters = (kIW + 31) / 32;\n"
     << "constexpr size_t kSmemBytes = " << smem_bytes << ";\n"
     << "constexpr int kTileFloats = kInFloats > kCout * kLdOut ? kInFloats : kCout * kLdOut;  // window, then "
        "results\n"
     << "static_assert(kSmemBytes == (kWFloats + kTileFloats + kKSteps * 8 + kCout) * sizeof(float));\n"
     << "static_assert(kCout % 8 == 0 && kCout <= " << kernels::kImplicitGemmMaxChannels
     << ", \"C_out: a multiple of 8 up to " << kernels::kImplicitGemmMaxChannels << "\");\n\n"
     << "__device__ __forceinline__ float " << name << "_tf32(float x) {\n"
     << "  unsigned r;\n"
     << "  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));\n"
     << "  return __uint_as_float(r);\n"
     << "}\n\n"
     << "// The window of tile `tile` into registers: v[a][u] is row warp + 8a ((ci, r) of the [C_in * kh]\n"
     << "// rows), column lane + 32u; zero outside the input (padding) and past the window.\n"
     << "__device__ __forceinline__ void " << name << "_load_window(const float* __restrict__ x, long long tile,\n"
     << "                                                  float (&v)[kRowIters][kColIters]) {\n"
     << "  const int qt = (int)(tile % kQTiles);\n"
     << "  const long long np = tile / kQTiles;\n"
     << "  const int p = (int)(np % kP);\n"
     << "  const long long n = np / kP;\n"
     << "  const int w0 = qt * kBQ * kStrW - kPadW, h0 = p * kStrH - kPadH;\n"
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
     << "#pragma unroll\n"
     << "  for (int a = 0; a < kRowIters; ++a) {\n"
     << "    const int row = warp + 8 * a, ci = row / kR, h = h0 + (row - ci * kR) * kDilH;\n"
     << "    const bool row_in = row < kInRows && h >= 0 && h < kH;\n"
     << "    const float* xr = x + ((n * kCin + ci) * kH + (row_in ? h : 0)) * (long long)kW;\n"
     << "#pragma unroll\n"
     << "    for (int u = 0; u < kColIters; ++u) {\n"
     << "      const int j = lane + 32 * u, w = w0 + j;\n"
     << "      v[a][u] = (row_in && j < kIW && w >= 0 && w < kW) ? __ldg(xr + w) : 0.0f;\n"
     << "    }\n"
     << "  }\n"
     << "}\n\n";
  const std::string params = std::string("(const float* __restrict__ x, const float* __restrict__ wt, ") +
                             (has_bias ? "const float* __restrict__ bias, " : "") +
                             (epi != nullptr && !epi->chain.params.empty() ? epi->chain.params + ", " : "") + OT +
                             "* __restrict__ out)";
  os << "__global__ void __launch_bounds__(256, " << min_blocks << ") " << name << "_implicit_gemm" << params << " {\n"
     << "  extern __shared__ float smem[];\n"
     << "  float* w_s = smem;                     // [kKSteps * 8][kLdW]: B[k][c_out], TF32\n"
     << "  float* in_s = smem + kWFloats;         // [kInRows][kLdIn] window, TF32, then the zero row\n"
     << "  float* out_s = in_s;                   // [kCout][kLdOut]: the tile's results, over the window\n"
     << "  int* k_off = reinterpret_cast<int*>(in_s + kTileFloats);  // [kKSteps * 8]\n"
     << (has_bias ? "  float* bias_s = in_s + kTileFloats + kKSteps * 8;        // [kCout]\n" : "")
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
     << "  const int g = lane >> 2, t = lane & 3;  // the mma fragments' row group and column\n"
     << "  for (int e = threadIdx.x; e < kKSteps * 8 * kCout; e += 256) {\n"
     << "    const int co = e / (kKSteps * 8), k = e - co * (kKSteps * 8);\n"
     << "    w_s[k * kLdW + co] = k < kK ? " << name << "_tf32(__ldg(wt + co * kK + k)) : 0.0f;\n"
     << "  }\n"

     << (has_bias ? "  for (int c = threadIdx.x; c < kCout; c += 256) bias_s[c] = bias[c];\n" : "")
     << "  // Where A's column k starts in the window (padded k: the zero row).\n"
     << "  for (int k = threadIdx.x; k < kKSteps * 8; k += 256) {\n"
     << "    const int ci = k / (kR * kS), rs = k - ci * (kR * kS), r = rs / kS, s = rs - r * kS;\n"
     << "    k_off[k] = k < kK ? (ci * kR + r) * kLdIn + s * kDilW : kZeroRow;\n"
     << "  }\n"
     << "  const int m_lo = 16 * warp + g;  // this lane's A rows: m_lo and m_lo + 8\n"
     << "  float v[kRowIters][kColIters];\n"
     << "  long long tile = blockIdx.x;\n"
     << "  if (tile < kTiles) " << name << "_load_window(x, tile, v);\n"
     << "  for (; tile < kTiles; tile += gridDim.x) {\n"
     << "#pragma unroll\n"
     << "    for (int a = 0; a < kRowIters; ++a) {\n"
     << "#pragma unroll\n"
     << "      for (int u = 0; u < kColIters; ++u) {\n"
     << "        const int row = warp + 8 * a, j = lane + 32 * u;\n"
     << "        if (row < kInRows && j < kIW) in_s[row * kLdIn + j] = " << name << "_tf32(v[a][u]);\n"
     << "      }\n"
     << "    }\n"
     << "    if (kKSteps * 8 != kK) {  // the zero row, which the last tile's results covered\n"
     << "      for (int e = kZeroRow + threadIdx.x; e < kInFloats; e += 256) in_s[e] = 0.0f;\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    float acc[kCout / 8][4];\n"
     << "#pragma unroll\n"
     << "    for (int nt = 0; nt < kCout / 8; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;\n"
     << "#pragma unroll\n"
     << "    for (int ks = 0; ks < kKSteps; ++ks) {\n"
     << "      const float* a_lo = in_s + m_lo * kStrW + k_off[8 * ks + t];\n"
     << "      const float* a_hi = in_s + m_lo * kStrW + k_off[8 * ks + t + 4];\n"
     << "      const unsigned a0 = __float_as_uint(a_lo[0]), a1 = __float_as_uint(a_lo[8 * kStrW]);\n"
     << "      const unsigned a2 = __float_as_uint(a_hi[0]), a3 = __float_as_uint(a_hi[8 * kStrW]);\n"
     << "      const float* b = w_s + (8 * ks + t) * kLdW + g;\n"
     << "#pragma unroll\n"
     << "      for (int nt = 0; nt < kCout / 8; ++nt) {\n"
     << "        const unsigned b0 = __float_as_uint(b[8 * nt]), b1 = __float_as_uint(b[4 * kLdW + 8 * nt]);\n"
     << "        asm volatile(\n"
     << "            \"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, \"\n"
     << "            \"{%8, %9}, {%0, %1, %2, %3};\"\n"
     << "            : \"+f\"(acc[nt][0]), \"+f\"(acc[nt][1]), \"+f\"(acc[nt][2]), \"+f\"(acc[nt][3])\n"
     << "            : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
     << "      }\n"
     << "    }\n"
     << "    __syncthreads();  // every warp has read the window: the results go over it\n"
     << "    // C fragment: acc[nt] = C[m_lo][c], C[m_lo][c + 1], C[m_lo + 8][c], C[m_lo + 8][c + 1], c = 8 nt + 2t.\n"
     << "#pragma unroll\n"
     << "    for (int nt = 0; nt < kCout / 8; ++nt) {\n"
     << "      float* o = out_s + (8 * nt + 2 * t) * kLdOut + m_lo;\n"
     << "      o[0] = acc[nt][0];\n"
     << "      o[kLdOut] = acc[nt][1];\n"
     << "      o[8] = acc[nt][2];\n"
     << "      o[kLdOut + 8] = acc[nt][3];\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    const int qt = (int)(tile % kQTiles);\n"
     << "    const long long np = tile / kQTiles;\n"
     << "    const int p = (int)(np % kP), q0 = qt * kBQ;\n"
     << "    const long long n = np / kP;\n"
     << "    if (tile + gridDim.x < kTiles) " << name
     << "_load_window(x, tile + gridDim.x, v);  // in flight during the stores\n"
     << "#pragma unroll\n"
     << "    for (int j = 0; j < kCout / 8; ++j) {\n"
     << "      const int c = warp + 8 * j;\n"
     << "      const long long i_row = (n * kCout + c) * (long long)(kP * kQ);  // the (n, c) plane's first index\n"
     << "      const long long i0 = i_row + (long long)p * kQ + q0;\n"
     << (has_bias ? "      const float bc = bias_s[c];\n" : "") << "#pragma unroll\n"
     << "      for (int u = 0; u < kBQ / 32; ++u) {\n"
     << "        const int m = lane + 32 * u;\n"
     << "        if (q0 + m < kQ) {\n"
     << "          const long long i = i0 + m;\n"
     << "          const float val = " << (has_bias ? "out_s[c * kLdOut + m] + bc" : "out_s[c * kLdOut + m]") << ";\n"
     << "          ";
  // Streaming stores (evict-first) for float results: the output is not read again here, the input
  // rows are (each by kh tiles).
  const std::string value = epi != nullptr ? epi->name + "(i, val" +
                                                 (epi->chain.call_args.empty() ? "" : ", " + epi->chain.call_args) +
                                                 (row_indexed ? ", i_row" : "") + ")"
                                           : "val";
  os << (OT == "float" ? "__stcs(out + i, " + value + ");\n" : "out[i] = " + value + ";\n");
  os << "        }\n"
     << "      }\n"
     << "    }\n"
     << "    __syncthreads();  // every warp has read the results: the next window goes over them\n"
     << "  }\n"
     << "}\n"
     << "}  // namespace\n\n";
  const std::string args = "(" + ctx.in_ptr(0) + ", " + ctx.in_ptr(1) + ", " + (has_bias ? ctx.in_ptr(2) + ", " : "") +
                           (epi != nullptr && !epi->chain.host_args.empty() ? epi->chain.host_args + ", " : "") +
                           ctx.out_ptr() + ")";
  os << ctx.signature() << " {\n"
     << "  // Persistent blocks: as many as fit on the device at once (shared memory bounds them), at most one\n"
     << "  // per tile; computed once per device.\n"
     << "  static int blocks_per_device[64] = {0};\n"
     << "  int& blocks = blocks_per_device[ctx->device & 63];\n"
     << "  if (blocks == 0) {\n"
     << "    KF_CUDA(cudaFuncSetAttribute(" << name
     << "_implicit_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmemBytes));\n"
     << "    int sms = 0, per_sm = 0;\n"
     << "    KF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device));\n"
     << "    KF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, " << name
     << "_implicit_gemm, 256, kSmemBytes));\n"
     << "    if (per_sm < 1) return kf_fail(1, \"" << name
     << ": the implicit GEMM's %zu bytes of shared memory do not fit on an SM\", kSmemBytes);\n"
     << "    const long long b = (long long)sms * per_sm;\n"
     << "    blocks = (int)(b < kTiles ? b : kTiles);\n"
     << "  }\n"
     << "  " << name << "_implicit_gemm<<<blocks, 256, kSmemBytes, ctx->stream>>>" << args << ";\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  return os.str();
}

}  // namespace kforge::codegen::conv
