// Softmax family: softmax and log_softmax along any dim. One pass computes the row's max and sum of
// exp(x - max) online (sum in double), a second pass writes exp(x - max) / sum or x - max - log(sum).
// Contiguous rows (dim innermost) get a group of lanes (rows of at most 16), a warp (short rows) or a block
// per row, split over several blocks with a partial-merge pass when rows are few and long; a dim with inner
// elements gets threads over the consecutive columns (coalesced) and the dim split over the block's y threads.
#include <algorithm>
#include <bit>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/reduce_common.h"

namespace kforge::codegen {

namespace {

using reduce::ll;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::string to_out(ir::DType t, const std::string& expr) {
  std::string c = ctype(t);
  if (t == ir::DType::kFloat16 || t == ir::DType::kBFloat16) return "(" + c + ")(float)(" + expr + ")";
  return "(" + c + ")(" + expr + ")";
}

}  // namespace

StatusOr<KernelSource> emit_Softmax(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& in = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  const int64_t numel = out.numel();
  if (numel == 0) {
    KernelSource src = begin_source(ctx);
    src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
    src.launches = 0;
    return src;
  }
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t dim = node.attrs.i("dim");
  if (dim < 0) dim += std::max<int64_t>(rank, 1);
  int64_t outer = 1, L = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < dim) outer *= in.shape[static_cast<size_t>(i)];
    if (i == dim) L = in.shape[static_cast<size_t>(i)];
    if (i > dim) inner *= in.shape[static_cast<size_t>(i)];
  }
  const bool log = node.op == ir::OpId::kLogSoftmax;
  const std::string CT = in.dtype == ir::DType::kFloat64 ? "double" : "float";
  const std::string ex = CT == "double" ? "exp" : "expf";
  const std::string IT = ctype(in.dtype), OT = ctype(out.dtype);
  const std::string K = ctx.kernel.name;
  const std::string A = K + "_A";
  const int B = static_cast<int>(std::clamp<int64_t>(ctx.kernel.knob(schedule::Knob::kBlock, 256), 32, 1024)) / 32 * 32;
  const std::string load = ir::is_floating(in.dtype) ? "(" + CT + ")" : "(" + CT + ")(long long)";

  // Row statistics `a` (merged) -> the constants of the write pass.
  std::string consts = "      const " + CT + " mx = a.m;\n";
  if (log) {
    consts += "      const " + CT + " ls = mx == INFINITY ? (" + CT + ")NAN : (" + CT + ")log(a.s);\n";
  } else {
    consts += "      const " + CT + " sm_ = mx == INFINITY ? (" + CT + ")NAN : (" + CT + ")a.s;\n";
  }
  auto value = [&](const std::string& x) { return log ? "((" + x + ") - mx) - ls" : ex + "((" + x + ") - mx) / sm_"; };

  std::ostringstream dev, host;
  std::string mode;
  int64_t launches = 1;
  size_t workspace = 0;
  std::string params = "const " + IT + "* __restrict__ in, " + OT + "* __restrict__ out";
  std::string args = ctx.in_ptr(0) + ", " + ctx.out_ptr();
  dev << reduce::lse_acc(A, CT) << "\n";

  if (inner == 1 && L <= 16) {
    // Rows of at most 16 (a classifier's classes, a router's experts): a group of G lanes per row (L rounded
    // up to a power of two), 32 / G rows per warp; every lane of a warp runs each step (rows past the end
    // compute nothing) so that the shuffles see the whole warp.
    const int64_t G = std::bit_ceil(static_cast<uint64_t>(L));
    const int64_t R = 32 / G;
    const int64_t steps = ceil_div(outer, R);
    mode = "groups of " + std::to_string(G) + " lanes per row";
    dev << "__global__ void __launch_bounds__(256) " << K << "_groups(" << params << ") {\n"
        << "  const int lane = threadIdx.x & " << (G - 1) << ";\n"
        << "  const long long slot = (threadIdx.x & 31) / " << G << ";\n"
        << "  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
        << "  const long long nwarps = (gridDim.x * (long long)blockDim.x) >> 5;\n"
        << "  for (long long w = warp; w < " << ll(steps) << "; w += nwarps) {\n"
        << "    const long long r = w * " << ll(R) << " + slot;\n"
        << "    const int n = r < " << ll(outer) << " ? " << L << " : 0;\n"
        << "    const " << IT << "* x = in + (n ? r : 0LL) * " << ll(L) << ";\n"
        << "    " << OT << "* y = out + (n ? r : 0LL) * " << ll(L) << ";\n"
        << "    " << A << " a;\n"
        << "    a.m = -INFINITY;\n"
        << "    a.s = 0.0;\n"
        << "    for (int j = lane; j < n; j += " << G << ") a.add(" << load << "x[j]);\n"
        << "    kf_group_merge<" << G << ">(a);\n"
        << "    a.m = __shfl_sync(0xffffffffu, a.m, 0, " << G << ");\n"
        << "    a.s = __shfl_sync(0xffffffffu, a.s, 0, " << G << ");\n"
        << "    {\n"
        << consts << "      for (int j = lane; j < n; j += " << G
        << ") y[j] = " << to_out(out.dtype, value(load + "x[j]")) << ";\n"
        << "    }\n"
        << "  }\n"
        << "}\n";
    host << "  " << K << "_groups<<<" << std::min<int64_t>(ceil_div(steps, 8), 4224) << ", 256, 0, ctx->stream>>>("
         << args << ");\n"
         << "  KF_LAUNCHED();\n";
  } else if (inner == 1 && L <= 1024) {
    mode = "warp per row";
    dev << "__global__ void __launch_bounds__(256) " << K << "_warp(" << params << ") {\n"
        << "  const int lane = threadIdx.x & 31;\n"
        << "  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
        << "  const long long nwarps = (gridDim.x * (long long)blockDim.x) >> 5;\n"
        << "  for (long long r = warp; r < " << ll(outer) << "; r += nwarps) {\n"
        << "    const " << IT << "* x = in + r * " << ll(L) << ";\n"
        << "    " << OT << "* y = out + r * " << ll(L) << ";\n"
        << "    " << A << " a;\n"
        << "    a.m = -INFINITY;\n"
        << "    a.s = 0.0;\n"
        << "    for (int j = lane; j < " << L << "; j += 32) a.add(" << load << "x[j]);\n"
        << "    kf_warp_merge(a);\n"
        << "    a.m = __shfl_sync(0xffffffffu, a.m, 0);\n"
        << "    a.s = __shfl_sync(0xffffffffu, a.s, 0);\n"
        << "    {\n"
        << consts << "      for (int j = lane; j < " << L
        << "; j += 32) y[j] = " << to_out(out.dtype, value(load + "x[j]")) << ";\n"
        << "    }\n"
        << "  }\n"
        << "}\n";
    host << "  " << K << "_warp<<<" << std::min<int64_t>(ceil_div(outer, 8), 4224) << ", 256, 0, ctx->stream>>>("
         << args << ");\n"
         << "  KF_LAUNCHED();\n";
  } else if (inner == 1) {
    // Split long rows over S blocks when there are too few rows to fill the GPU.
    int64_t S = 1;
    if (outer < 1056 && L > 65536) S = std::min(ceil_div(2112, outer), ceil_div(L, 32768));
    int64_t CH = ceil_div(ceil_div(L, S), 4) * 4;
    S = ceil_div(L, CH);
    const bool vec = in.dtype == ir::DType::kFloat32 && out.dtype == ir::DType::kFloat32 && L % 4 == 0;
    mode = S == 1 ? "block per row" : "block per row chunk, split " + std::to_string(S);
    // The statistics loop over [j0, j1) of row pointer x into `a`.
    auto stats_loop = [&](const std::string& ind) {
      std::ostringstream os;
      if (vec) {
        // Four vectors in flight per thread, each added with one rescale (lse add4).
        os << ind << "if (VEC) {\n"
           << ind << "  const float4* x4 = reinterpret_cast<const float4*>(x + j0);\n"
           << ind << "  const long long n4 = (j1 - j0) >> 2;\n"
           << ind << "  long long q = threadIdx.x;\n"
           << ind << "  for (; q + " << 3 * B << "LL < n4; q += " << 4 * B << "LL) {\n"
           << ind << "    const float4 w0 = x4[q], w1 = x4[q + " << B << "LL], w2 = x4[q + " << 2 * B
           << "LL], w3 = x4[q + " << 3 * B << "LL];\n"
           << ind << "    a.add4(w0.x, w0.y, w0.z, w0.w);\n"
           << ind << "    a.add4(w1.x, w1.y, w1.z, w1.w);\n"
           << ind << "    a.add4(w2.x, w2.y, w2.z, w2.w);\n"
           << ind << "    a.add4(w3.x, w3.y, w3.z, w3.w);\n"
           << ind << "  }\n"
           << ind << "  for (; q < n4; q += " << B << ") {\n"
           << ind << "    const float4 w = x4[q];\n"
           << ind << "    a.add4(w.x, w.y, w.z, w.w);\n"
           << ind << "  }\n"
           << ind << "} else {\n"
           << ind << "  for (long long j = j0 + threadIdx.x; j < j1; j += " << B << ") a.add(" << load << "x[j]);\n"
           << ind << "}\n";
      } else {
        os << ind << "for (long long j = j0 + threadIdx.x; j < j1; j += " << B << ") a.add(" << load << "x[j]);\n";
      }
      return os.str();
    };
    auto write_loop = [&](const std::string& ind) {
      std::ostringstream os;
      if (vec) {
        os << ind << "if (VEC) {\n"
           << ind << "  const float4* x4 = reinterpret_cast<const float4*>(x + j0);\n"
           << ind << "  float4* y4 = reinterpret_cast<float4*>(y + j0);\n"
           << ind << "#pragma unroll 4\n"
           << ind << "  for (long long q = threadIdx.x; q < ((j1 - j0) >> 2); q += " << B << ") {\n"
           << ind << "    const float4 w = x4[q];\n"
           << ind << "    float4 r;\n"
           << ind << "    r.x = " << value("w.x") << ";\n"
           << ind << "    r.y = " << value("w.y") << ";\n"
           << ind << "    r.z = " << value("w.z") << ";\n"
           << ind << "    r.w = " << value("w.w") << ";\n"
           << ind << "    y4[q] = r;\n"
           << ind << "  }\n"
           << ind << "} else {\n"
           << ind << "  for (long long j = j0 + threadIdx.x; j < j1; j += " << B
           << ") y[j] = " << to_out(out.dtype, value(load + "x[j]")) << ";\n"
           << ind << "}\n";
      } else {
        os << ind << "for (long long j = j0 + threadIdx.x; j < j1; j += " << B
           << ") y[j] = " << to_out(out.dtype, value(load + "x[j]")) << ";\n";
      }
      return os.str();
    };
    std::string row_ptrs = "    const " + IT + "* x = in + r * " + ll(L) + ";\n    " + OT + "* y = out + r * " + ll(L) +
                           ";\n    (void)y;\n";
    std::string chunk = "    const long long j0 = s * " + ll(CH) + ";\n    const long long j1 = j0 + " + ll(CH) +
                        " < " + ll(L) + " ? j0 + " + ll(CH) + " : " + ll(L) + ";\n";
    std::string vec_cond = "(reinterpret_cast<uintptr_t>(" + ctx.in_ptr(0) +
                           ") & 15) == 0 && (reinterpret_cast<uintptr_t>(" + ctx.out_ptr() + ") & 15) == 0";
    auto launch = [&](const std::string& kern, int64_t blocks, const std::string& a) {
      std::ostringstream os;
      if (vec) {
        os << "  if (" << vec_cond << ") {\n"
           << "    " << kern << "<true><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << a << ");\n"
           << "  } else {\n"
           << "    " << kern << "<false><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << a << ");\n"
           << "  }\n";
      } else {
        os << "  " << kern << "<false><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << a << ");\n";
      }
      os << "  KF_LAUNCHED();\n";
      return os.str();
    };
    if (S == 1) {
      dev << "template <bool VEC>\n"
          << "__global__ void __launch_bounds__(" << B << ") " << K << "_rows(" << params << ") {\n"
          << "  __shared__ " << A << " sm[32];\n"
          << "  __shared__ " << A << " row;\n"
          << "  for (long long r = blockIdx.x; r < " << ll(outer) << "; r += gridDim.x) {\n"
          << row_ptrs << "    const long long s = 0;\n"
          << chunk << "    " << A << " a;\n"
          << "    a.m = -INFINITY;\n"
          << "    a.s = 0.0;\n"
          << stats_loop("    ") << "    a = kf_block_merge(a, sm);\n"
          << "    if (threadIdx.x == 0) row = a;\n"
          << "    __syncthreads();\n"
          << "    a = row;\n"
          << "    {\n"
          << consts << write_loop("      ") << "    }\n"
          << "    __syncthreads();\n"
          << "  }\n"
          << "}\n";
      host << launch(K + "_rows", std::min<int64_t>(outer, 4224), args);
    } else {
      workspace = reduce::align256(static_cast<size_t>(outer * S) * 16);
      std::string pparams = params + ", " + A + "* __restrict__ part";
      dev << "template <bool VEC>\n"
          << "__global__ void __launch_bounds__(" << B << ") " << K << "_stats(" << pparams << ") {\n"
          << "  __shared__ " << A << " sm[32];\n"
          << "  for (long long t = blockIdx.x; t < " << ll(outer * S) << "; t += gridDim.x) {\n"
          << "    const long long r = t / " << ll(S) << ", s = t - r * " << ll(S) << ";\n"
          << row_ptrs << chunk << "    " << A << " a;\n"
          << "    a.m = -INFINITY;\n"
          << "    a.s = 0.0;\n"
          << stats_loop("    ") << "    a = kf_block_merge(a, sm);\n"
          << "    if (threadIdx.x == 0) part[t] = a;\n"
          << "  }\n"
          << "}\n"
          << "template <bool VEC>\n"
          << "__global__ void __launch_bounds__(" << B << ") " << K << "_write(" << pparams << ") {\n"
          << "  __shared__ " << A << " sm[32];\n"
          << "  __shared__ " << A << " row;\n"
          << "  for (long long t = blockIdx.x; t < " << ll(outer * S) << "; t += gridDim.x) {\n"
          << "    const long long r = t / " << ll(S) << ", s = t - r * " << ll(S) << ";\n"
          << row_ptrs << chunk << "    " << A << " a;\n"
          << "    a.m = -INFINITY;\n"
          << "    a.s = 0.0;\n"
          << "    for (long long k = threadIdx.x; k < " << ll(S) << "; k += " << B << ") a.merge(part[r * " << ll(S)
          << " + k]);\n"
          << "    a = kf_block_merge(a, sm);\n"
          << "    if (threadIdx.x == 0) row = a;\n"
          << "    __syncthreads();\n"
          << "    a = row;\n"
          << "    {\n"
          << consts << write_loop("      ") << "    }\n"
          << "    __syncthreads();\n"
          << "  }\n"
          << "}\n";
      std::string pargs = args + ", " + K + "_part";
      host << "  if (ctx->workspace_bytes < " << workspace << "ULL) return kf_fail(3, \"" << K
           << ": workspace of %zu bytes is smaller than the " << workspace << " it needs\", ctx->workspace_bytes);\n"
           << "  " << A << "* " << K << "_part = reinterpret_cast<" << A << "*>(ctx->workspace);\n"
           << launch(K + "_stats", std::min<int64_t>(outer * S, 4224), pargs)
           << launch(K + "_write", std::min<int64_t>(outer * S, 4224), pargs);
      launches = 2;
    }
  } else {
    const int64_t TY = L >= 64 ? 8 : 1, TX = 256 / TY;
    const int64_t cols = outer * inner;
    const int64_t tiles = ceil_div(cols, TX);
    // Few columns along a long dim: split the dim over S blocks per tile (partials, then merge + write).
    int64_t S = 1;
    if (TY > 1 && tiles < 1056) S = std::min(ceil_div(2112, tiles), ceil_div(L, TY * 256));
    const int64_t CH = ceil_div(L, S);
    S = ceil_div(L, CH);
    mode = "columns " + std::to_string(TX) + "x" + std::to_string(TY) + (S > 1 ? ", split " + std::to_string(S) : "");
    std::string locate = "    const long long tile = t / " + ll(S) + ", s = t - tile * " + ll(S) + ";\n" +
                         "    const long long c = tile * " + ll(TX) + " + threadIdx.x;\n" +
                         "    const bool valid = c < " + ll(cols) + ";\n" + "    const long long o = c / " + ll(inner) +
                         ";\n" + "    const long long base = o * " + ll(L * inner) + " + (c - o * " + ll(inner) +
                         ");\n" + "    const long long l0 = s * " + ll(CH) + ";\n" + "    const long long l1 = l0 + " +
                         ll(CH) + " < " + ll(L) + " ? l0 + " + ll(CH) + " : " + ll(L) + ";\n" + "    " + A +
                         " a;\n    a.m = -INFINITY;\n    a.s = 0.0;\n";
    // Merge over the block's y threads; with `all`, every thread gets the merged value.
    auto ymerge = [&](bool all) {
      std::ostringstream os;
      if (TY == 1) return os.str();
      os << "    sm[threadIdx.y][threadIdx.x] = a;\n"
         << "    __syncthreads();\n"
         << "    if (threadIdx.y == 0) {\n"
         << "      for (int k = 1; k < " << TY << "; ++k) a.merge(sm[k][threadIdx.x]);\n"
         << (all ? "      sm[0][threadIdx.x] = a;\n" : "") << "    }\n"
         << "    __syncthreads();\n";
      if (all) os << "    a = sm[0][threadIdx.x];\n    __syncthreads();\n";
      return os.str();
    };
    std::string write = "    if (valid) {\n" + consts +
                        "      for (long long l = l0 + threadIdx.y; l < l1; l += " + std::to_string(TY) +
                        ") out[base + l * " + ll(inner) +
                        "] = " + to_out(out.dtype, value(load + "in[base + l * " + ll(inner) + "]")) + ";\n    }\n";
    std::string stats =
        "    if (valid) {\n      for (long long l = l0 + threadIdx.y; l < l1; l += " + std::to_string(TY) + ") a.add(" +
        load + "in[base + l * " + ll(inner) + "]);\n    }\n";
    std::string smem =
        TY > 1 ? "  __shared__ " + A + " sm[" + std::to_string(TY) + "][" + std::to_string(TX) + "];\n" : "";
    std::string loop = "  for (long long t = blockIdx.x; t < " + ll(tiles * S) + "; t += gridDim.x) {\n";
    int64_t blocks = std::min<int64_t>(tiles * S, 4224);
    if (S == 1) {
      dev << "__global__ void __launch_bounds__(" << TX * TY << ") " << K << "_cols(" << params << ") {\n"
          << smem << loop << locate << stats << ymerge(true) << write << "  }\n"
          << "}\n";
      host << "  " << K << "_cols<<<" << blocks << ", dim3(" << TX << ", " << TY << "), 0, ctx->stream>>>(" << args
           << ");\n"
           << "  KF_LAUNCHED();\n";
    } else {
      workspace = reduce::align256(static_cast<size_t>(cols * S) * 16);
      std::string pparams = params + ", " + A + "* __restrict__ part";
      dev << "__global__ void __launch_bounds__(" << TX * TY << ") " << K << "_cstats(" << pparams << ") {\n"
          << smem << loop << locate << stats << ymerge(false) << "    if (threadIdx.y == 0 && valid) part[c * " << ll(S)
          << " + s] = a;\n"
          << "  }\n"
          << "}\n"
          << "__global__ void __launch_bounds__(" << TX * TY << ") " << K << "_cwrite(" << pparams << ") {\n"
          << smem << loop << locate << "    if (valid) {\n"
          << "      for (long long k = threadIdx.y; k < " << ll(S) << "; k += " << TY << ") a.merge(part[c * " << ll(S)
          << " + k]);\n"
          << "    }\n"
          << ymerge(true) << write << "  }\n"
          << "}\n";
      std::string pargs = args + ", " + K + "_part";
      host << "  if (ctx->workspace_bytes < " << workspace << "ULL) return kf_fail(3, \"" << K
           << ": workspace of %zu bytes is smaller than the " << workspace << " it needs\", ctx->workspace_bytes);\n"
           << "  " << A << "* " << K << "_part = reinterpret_cast<" << A << "*>(ctx->workspace);\n"
           << "  " << K << "_cstats<<<" << blocks << ", dim3(" << TX << ", " << TY << "), 0, ctx->stream>>>(" << pargs
           << ");\n"
           << "  KF_LAUNCHED();\n"
           << "  " << K << "_cwrite<<<" << blocks << ", dim3(" << TX << ", " << TY << "), 0, ctx->stream>>>(" << pargs
           << ");\n"
           << "  KF_LAUNCHED();\n";
      launches = 2;
    }
  }

  KernelSource src = begin_source(ctx, reduce::half_headers({in.dtype, out.dtype}));
  std::ostringstream os;
  os << reduce::device_prelude() << "\nnamespace {\n\n"
     << dev.str() << "\n}  // namespace\n\n"
     << "// " << (log ? "log_softmax" : "softmax") << " over [" << outer << ", " << L << ", " << inner << "]: " << mode
     << "\n"
     << ctx.signature() << " {\n"
     << host.str() << "  return 0;\n}\n";
  src.code += os.str();
  src.launches = launches;
  src.workspace_bytes = workspace;
  return src;
}

}  // namespace kforge::codegen
