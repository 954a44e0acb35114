// Scan family: cumsum, cumprod and logcumsumexp along any dim. Accumulation in double for floating inputs
// (64-bit wrapping integers otherwise), so long scans do not drift. logcumsumexp combines running values with
// log-add-exp, max(a, b) + log1p(exp(min - max)), whose identity is -inf: associative, so every scan below
// (warp shuffles, cub::BlockScan, chunk carries) runs it as it runs + and *.
//   - scan dim innermost, rows of at most 512: one warp per row, 32 positions at a time, a shuffle
//     scan of each 32 with the running carry of the ones before.
//   - scan dim innermost (longer rows): cub::BlockScan over tiles of the row with a running carry (the
//     block-prefix callback); when rows are few and long, each row is cut into chunks: chunk
//     totals, a sequential scan of the totals per row (the carries), then the chunked block scans.
//   - scan dim with inner elements (columns): one thread per column walks the dim, coalesced over
//     consecutive columns; with few columns, the dim is cut into chunks the same way (per-chunk
//     totals, a sequential scan of them per column, then the chunks scanned with their carries).
// The exclusive scan (scan_exclusive: slice, full, scan, cat) reads x's rows (L + 1 long) in place and
// writes its results one position on, the identity at position 0.
// The reverse scan (scan_reverse: flip, scan, flip) walks the dim from its end: position p in scan
// order is index L - 1 - p in memory, for reads and writes alike.
// With a pointwise prologue (the scan_prologue skill) every read of the input becomes a call of the
// chain's device function at that element's index; the row scans then evaluate it striped (coalesced)
// and exchange the values into each thread's blocked items (cub::BlockExchange).
#include <algorithm>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/reduce_common.h"
#include "kernels/forms.h"

namespace kforge::codegen {

namespace {

using reduce::ll;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Rows along the innermost dim up to this long are scanned by one warp each (below a quarter of the
// block scan's 2048-element tile); longer ones by a block each.
constexpr int64_t kWarpRowMax = 512;

}  // namespace

StatusOr<KernelSource> emit_Scan(const EmitContext& ctx) {
  // The scan node: the kernel's root, or (scan_reverse) the middle of flip, scan, flip, whose kernel
  // reads the first flip's input and writes the second flip's output, both at mirrored positions.
  // Or (scan_exclusive) the scan among slice, full, scan, cat: the kernel reads x (the slice's input)
  // in place and writes the cat's output shifted by one position, the identity at position 0.
  const bool reverse = kernels::is_scan_reverse(ctx.graph, ctx.kernel);
  const bool exclusive = kernels::is_scan_exclusive(ctx.graph, ctx.kernel);
  int scan_index = reverse ? ctx.kernel.nodes[1] : ctx.kernel.root();
  const ir::Node* slice = nullptr;
  if (exclusive) {
    for (int n : ctx.kernel.nodes) {
      const ir::Node& candidate = ctx.graph.nodes()[static_cast<size_t>(n)];
      if (ir::op_info(candidate.op).family == ir::OpFamily::kScan) scan_index = n;
      if (candidate.op == ir::OpId::kSlice) slice = &candidate;
    }
  }
  const ir::Node& node = ctx.graph.nodes()[static_cast<size_t>(scan_index)];
  const ir::TensorType& in = ctx.graph.type(node.inputs[0]);
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
  // Row lengths along the dim of the tensor read and of the one written, and where the scan's first
  // result goes in the written one: all L and 0 but for scan_exclusive (L + 1, L + 1 and 1).
  const int64_t L_in = exclusive ? L + 1 : L, L_out = exclusive ? L + 1 : L, shift = exclusive ? 1 : 0;
  const bool prod = node.op == ir::OpId::kCumprod;
  const bool logadd = node.op == ir::OpId::kLogcumsumexp;
  if (logadd && !ir::is_floating(in.dtype))
    return invalid_argument("kernel " + ctx.kernel.name + ": logcumsumexp of a " +
                            std::string(ir::dtype_name(in.dtype)) + " tensor (torch takes floating tensors only)");
  const bool floating = ir::is_floating(in.dtype);
  const bool half_in = in.dtype == ir::DType::kFloat16 || in.dtype == ir::DType::kBFloat16;
  const bool half_out = out.dtype == ir::DType::kFloat16 || out.dtype == ir::DType::kBFloat16;
  const std::string AT = floating ? "double" : "unsigned long long";
  const std::string IT = ctype(in.dtype), OT = ctype(out.dtype);
  const std::string K = ctx.kernel.name;
  const std::string ident = logadd ? "(" + AT + ")(-INFINITY)" : prod ? "(" + AT + ")1" : "(" + AT + ")0";
  auto conv_in = [&](const std::string& e) { return half_in ? "(" + AT + ")(float)" + e : "(" + AT + ")" + e; };
  auto conv_out = [&](const std::string& e) { return half_out ? "(" + OT + ")(float)" + e : "(" + OT + ")" + e; };

  std::ostringstream dev, host;
  std::string mode;
  int64_t launches = 0;
  size_t workspace = 0;
  dev << "struct " << K << "_Op {\n"
      << "  __device__ __forceinline__ " << AT << " operator()(const " << AT << "& a, const " << AT << "& b) const {\n";
  if (logadd) {
    // NaN in, NaN out (as torch); -inf is the identity; two +inf give +inf (not inf - inf).
    dev << "    if (a != a || b != b) return a + b;\n"
        << "    const double m = a > b ? a : b, n = a > b ? b : a;\n"
        << "    if (n == -INFINITY || m == INFINITY) return m;\n"
        << "    return m + log1p(exp(n - m));\n";
  } else {
    dev << "    return a " << (prod ? "*" : "+") << " b;\n";
  }
  dev << "  }\n"
      << "};\n";
  // What the scan reads: its input tensor, or (the scan_prologue skill) a pointwise chain computed at
  // each element where the scan would load it, never stored.
  std::string in_params = "const " + IT + "* __restrict__ in", prologue_code;
  std::string in_args = reverse ? ctx.ptr(ctx.graph.nodes()[static_cast<size_t>(ctx.kernel.nodes[0])].inputs[0], false)
                        : exclusive ? ctx.ptr(slice->inputs[0], false)
                                    : ctx.in_ptr(0);
  // A position along the dim in scan order -> its index in memory.
  auto at = [&](const std::string& pos) { return reverse ? "(" + ll(L - 1) + " - " + pos + ")" : pos; };
  std::string prologue_fn, prologue_call_args;
  if (ctx.kernel.nodes.size() > 1 && !reverse && !exclusive) {
    const std::vector<int> prologue(ctx.kernel.nodes.begin(), ctx.kernel.nodes.end() - 1);
    if (ctx.graph.nodes()[static_cast<size_t>(prologue.back())].output != node.inputs[0])
      return internal_error("kernel " + K + ": the prologue does not make the scan's input");
    prologue_fn = K + "_prologue";
    KF_ASSIGN_OR_RETURN(PointwiseFunction f, pointwise_function(ctx, prologue, prologue_fn));
    in_params = f.params;
    in_args = f.host_args;
    prologue_call_args = f.call_args;
    prologue_code = "// The prologue, computed at each element the scan reads:\n" + f.code;
  }
  const bool with_prologue = !prologue_fn.empty();
  auto read = [&](const std::string& index) {
    return with_prologue
               ? prologue_fn + "(" + index + (prologue_call_args.empty() ? "" : ", " + prologue_call_args) + ")"
               : "in[" + index + "]";
  };
  auto param_list = [&](const std::string& rest) { return in_params.empty() ? rest : in_params + ", " + rest; };
  auto arg_list = [&](const std::string& rest) { return in_args.empty() ? rest : in_args + ", " + rest; };
  std::string args = arg_list(ctx.out_ptr());
  if (with_prologue) dev << prologue_code << "\n";

  std::string headers = reduce::half_headers({in.dtype, out.dtype});
  if (inner == 1 && L <= kWarpRowMax) {
    // Short rows: one warp per row, 32 consecutive positions at a time (coalesced reads and writes), a
    // shuffle scan of each 32 carried into the next; a block per row would leave most of a 2048 tile idle.
    mode = "warp scan per row";
    dev << "__global__ void __launch_bounds__(256) " << K << "_warp(" << param_list(OT + "* __restrict__ out")
        << ") {\n"
        << "  const int lane = threadIdx.x & 31;\n"
        << "  for (long long r = blockIdx.x * 8LL + (threadIdx.x >> 5); r < " << ll(outer)
        << "; r += gridDim.x * 8LL) {\n"
        << "    const long long xb = r * " << ll(L_in) << ";  // the row's first element\n"
        << "    (void)xb;\n"
        << "    " << OT << "* y = out + r * " << ll(L_out) << (shift ? " + " + ll(shift) : "") << ";\n"
        << (exclusive ? "    if (lane == 0) out[r * " + ll(L_out) + "] = " + conv_out(ident) +
                            ";  // position 0: the identity\n"
                      : "")
        << "    " << AT << " run = " << ident << ";\n"
        << "    for (long long q = 0; q < " << ll(L) << "; q += 32) {\n"
        << "      const long long j = q + lane;\n"
        << "      " << AT << " v = j < " << ll(L) << " ? " << conv_in(read("xb + " + at("j"))) << " : " << ident
        << ";\n"
        << "#pragma unroll\n"
        << "      for (int d = 1; d < 32; d <<= 1) {\n"
        << "        const " << AT << " u = __shfl_up_sync(0xffffffffu, v, d);\n"
        << "        if (lane >= d) v = " << K << "_Op()(u, v);\n"
        << "      }\n"
        << "      v = " << K << "_Op()(run, v);\n"
        << "      if (j < " << ll(L) << ") y[" << at("j") << "] = " << conv_out("v") << ";\n"
        << "      run = __shfl_sync(0xffffffffu, v, 31);\n"
        << "    }\n"
        << "  }\n"
        << "}\n";
    host << "  " << K << "_warp<<<" << std::min<int64_t>(ceil_div(outer, 8), 4224) << ", 256, 0, ctx->stream>>>("
         << args << ");\n"
         << "  KF_LAUNCHED();\n";
    launches = 1;
  } else if (inner == 1) {
    headers +=
        "#include <cub/block/block_exchange.cuh>\n#include <cub/block/block_load.cuh>\n#include "
        "<cub/block/block_reduce.cuh>\n#include "
        "<cub/block/block_scan.cuh>\n"
        "#include <cub/block/block_store.cuh>\n";
    const int B = 256, IPT = 8, TILE = B * IPT;
    int64_t S = 1;
    if (outer < 1056 && L > 4 * TILE) S = std::min(ceil_div(2112, outer), ceil_div(L, 8 * TILE));
    int64_t CH = ceil_div(ceil_div(L, S), TILE) * TILE;
    S = ceil_div(L, CH);
    mode = S == 1 ? "block scan per row" : "chunked block scan, " + std::to_string(S) + " chunks per row";
    std::string tile_load;
    if (with_prologue || reverse) {
      // Striped (coalesced) reads (the prologue evaluated, or mirrored positions), then blocked per
      // thread for the scan.
      tile_load = "#pragma unroll\n      for (int k = 0; k < " + std::to_string(IPT) +
                  "; ++k) {\n        const long long j = q + k * " + std::to_string(B) +
                  " + threadIdx.x;\n        raw[k] = j < j1 ? " + read("xb + " + at("j")) + " : (" + IT + ")" +
                  (half_in ? "0.0f" : "0") + ";\n      }\n      " + K +
                  "_Exchange(tmp.exchange).StripedToBlocked(raw);\n";
    } else {
      tile_load = "      if (valid == " + std::to_string(TILE) + ") {\n        " + K +
                  "_Load(tmp.load).Load(in + xb + q, raw);\n      } else {\n        " + K +
                  "_Load(tmp.load).Load(in + xb + q, raw, valid, (" + IT + ")" + (half_in ? "0.0f" : "0") +
                  ");\n      }\n";
    }
    std::string tile_store;
    if (reverse) {
      // Blocked per thread -> striped, then stored at the mirrored positions (still coalesced).
      tile_store = "      " + K + "_OutExchange(tmp.out_exchange).BlockedToStriped(o);\n#pragma unroll\n" +
                   "      for (int k = 0; k < " + std::to_string(IPT) +
                   "; ++k) {\n        const long long j = q + k * " + std::to_string(B) +
                   " + threadIdx.x;\n        if (j < j1) y[" + at("j") + "] = o[k];\n      }\n";
    } else {
      tile_store = "      if (valid == " + std::to_string(TILE) + ") {\n        " + K +
                   "_Store(tmp.store).Store(y + q, o);\n      } else {\n        " + K +
                   "_Store(tmp.store).Store(y + q, o, valid);\n      }\n";
    }
    dev << "struct " << K << "_Prefix {\n"
        << "  " << AT << " run;\n"
        << "  __device__ __forceinline__ " << AT << " operator()(" << AT << " agg) { const " << AT
        << " old = run; run = " << K << "_Op()(run, agg); return old; }\n"
        << "};\n"
        << "typedef cub::BlockLoad<" << IT << ", " << B << ", " << IPT << ", cub::BLOCK_LOAD_WARP_TRANSPOSE> " << K
        << "_Load;\n"
        << "typedef cub::BlockExchange<" << IT << ", " << B << ", " << IPT << "> " << K << "_Exchange;\n"
        << "typedef cub::BlockExchange<" << OT << ", " << B << ", " << IPT << "> " << K << "_OutExchange;\n"
        << "typedef cub::BlockScan<" << AT << ", " << B << ", cub::BLOCK_SCAN_WARP_SCANS> " << K << "_Scan;\n"
        << "typedef cub::BlockStore<" << OT << ", " << B << ", " << IPT << ", cub::BLOCK_STORE_WARP_TRANSPOSE> " << K
        << "_Store;\n"
        << "__global__ void __launch_bounds__(" << B << ") " << K << "_scan("
        << param_list(OT + "* __restrict__ out, const " + AT + "* __restrict__ carry") << ") {\n"
        << "  __shared__ union {\n"
        << "    typename " << K << "_Load::TempStorage load;\n"
        << "    typename " << K << "_Exchange::TempStorage exchange;\n"
        << "    typename " << K << "_OutExchange::TempStorage out_exchange;\n"
        << "    typename " << K << "_Scan::TempStorage scan;\n"
        << "    typename " << K << "_Store::TempStorage store;\n"
        << "  } tmp;\n"
        << "  for (long long t = blockIdx.x; t < " << ll(outer * S) << "; t += gridDim.x) {\n"
        << "    const long long r = t / " << ll(S) << ", c = t - r * " << ll(S) << ";\n"
        << "    const long long j0 = c * " << ll(CH) << ";\n"
        << "    const long long j1 = j0 + " << ll(CH) << " < " << ll(L) << " ? j0 + " << ll(CH) << " : " << ll(L)
        << ";\n"
        << "    const long long xb = r * " << ll(L_in) << ";  // the row's first element\n"
        << "    (void)xb;\n"
        << "    " << OT << "* y = out + r * " << ll(L_out) << (shift ? " + " + ll(shift) : "") << ";\n"
        << "    " << K << "_Prefix pre;\n"
        << (exclusive ? "    if (c == 0 && threadIdx.x == 0) out[r * " + ll(L_out) + "] = " + conv_out(ident) +
                            ";  // position 0: the identity\n"
                      : "")
        << "    pre.run = " << (S > 1 ? "carry[t]" : ident) << ";\n"
        << "    (void)carry;\n"
        << "    for (long long q = j0; q < j1; q += " << TILE << ") {\n"
        << "      const int valid = (int)(j1 - q < " << TILE << " ? j1 - q : " << TILE << ");\n"
        << "      (void)valid;\n"
        << "      " << IT << " raw[" << IPT << "];\n"
        << tile_load << "      " << AT << " v[" << IPT << "];\n"
        << "#pragma unroll\n"
        << "      for (int k = 0; k < " << IPT << "; ++k) v[k] = " << conv_in("raw[k]") << ";\n"
        << "      __syncthreads();\n"
        << "      " << K << "_Scan(tmp.scan).InclusiveScan(v, v, " << K << "_Op(), pre);\n"
        << "      __syncthreads();\n"
        << "      " << OT << " o[" << IPT << "];\n"
        << "#pragma unroll\n"
        << "      for (int k = 0; k < " << IPT << "; ++k) o[k] = " << conv_out("v[k]") << ";\n"
        << tile_store << "      __syncthreads();\n"
        << "    }\n"
        << "  }\n"
        << "}\n";
    if (S > 1) {
      workspace = reduce::align256(static_cast<size_t>(outer * S) * 8);
      dev << "typedef cub::BlockReduce<" << AT << ", " << B << "> " << K << "_Reduce;\n"
          << "__global__ void __launch_bounds__(" << B << ") " << K << "_totals("
          << param_list(AT + "* __restrict__ tot") << ") {\n"
          << "  __shared__ typename " << K << "_Reduce::TempStorage tmp;\n"
          << "  for (long long t = blockIdx.x; t < " << ll(outer * S) << "; t += gridDim.x) {\n"
          << "    const long long r = t / " << ll(S) << ", c = t - r * " << ll(S) << ";\n"
          << "    const long long j0 = c * " << ll(CH) << ";\n"
          << "    const long long j1 = j0 + " << ll(CH) << " < " << ll(L) << " ? j0 + " << ll(CH) << " : " << ll(L)
          << ";\n"
          << "    const long long xb = r * " << ll(L_in) << ";\n"
          << "    " << AT << " acc = " << ident << ";\n"
          << "    for (long long j = j0 + threadIdx.x; j < j1; j += " << B << ") acc = " << K << "_Op()(acc, "
          << conv_in(read("xb + " + at("j"))) << ");\n"
          << "    acc = " << K << "_Reduce(tmp).Reduce(acc, " << K << "_Op());\n"
          << "    if (threadIdx.x == 0) tot[t] = acc;\n"
          << "    __syncthreads();\n"
          << "  }\n"
          << "}\n"
          << "// Chunk totals -> the exclusive prefix (carry) of each chunk, in place, one thread per row.\n"
          << "__global__ void " << K << "_carries(" << AT << "* __restrict__ tot) {\n"
          << "  KF_GRID_STRIDE(r, " << ll(outer) << ") {\n"
          << "    " << AT << " run = " << ident << ";\n"
          << "    for (long long c = 0; c < " << ll(S) << "; ++c) {\n"
          << "      const " << AT << " t = tot[r * " << ll(S) << " + c];\n"
          << "      tot[r * " << ll(S) << " + c] = run;\n"
          << "      run = " << K << "_Op()(run, t);\n"
          << "    }\n"
          << "  }\n"
          << "}\n";
      host << "  if (ctx->workspace_bytes < " << workspace << "ULL) return kf_fail(3, \"" << K
           << ": workspace of %zu bytes is smaller than the " << workspace << " it needs\", ctx->workspace_bytes);\n"
           << "  " << AT << "* " << K << "_tot = reinterpret_cast<" << AT << "*>(ctx->workspace);\n"
           << "  " << K << "_totals<<<" << std::min<int64_t>(outer * S, 4224) << ", " << B << ", 0, ctx->stream>>>("
           << arg_list(K + "_tot") << ");\n"
           << "  KF_LAUNCHED();\n"
           << "  " << K << "_carries<<<kf_grid(" << ll(outer) << ", 128), 128, 0, ctx->stream>>>(" << K << "_tot);\n"
           << "  KF_LAUNCHED();\n"
           << "  " << K << "_scan<<<" << std::min<int64_t>(outer * S, 4224) << ", " << B << ", 0, ctx->stream>>>("
           << args << ", " << K << "_tot);\n"
           << "  KF_LAUNCHED();\n";
      launches = 3;
    } else {
      host << "  " << K << "_scan<<<" << std::min<int64_t>(outer, 4224) << ", " << B << ", 0, ctx->stream>>>(" << args
           << ", nullptr);\n"
           << "  KF_LAUNCHED();\n";
      launches = 1;
    }
  } else {
    const int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
    const int64_t cols = outer * inner;
    // Few columns along a long dim: cut the dim into S chunks per column (totals, carries, scans).
    int64_t S = 1;
    if (cols < 65536 && L >= 256) S = std::min(ceil_div(262144, cols), ceil_div(L, 64));
    const int64_t CH = ceil_div(L, S);
    S = ceil_div(L, CH);
    std::string locate = "    const long long chunk = t / " + ll(cols) + ", col = t - chunk * " + ll(cols) + ";\n" +
                         "    const long long o = col / " + ll(inner) + ";\n" + "    const long long base = o * " +
                         ll(L_in * inner) + " + (col - o * " + ll(inner) + ");\n" + "    const long long obase = o * " +
                         ll(L_out * inner) + " + (col - o * " + ll(inner) + ")" +
                         (shift ? " + " + ll(shift * inner) : "") + ";\n    (void)obase;\n" +
                         "    const long long l0 = chunk * " + ll(CH) + ";\n" + "    const long long l1 = l0 + " +
                         ll(CH) + " < " + ll(L) + " ? l0 + " + ll(CH) + " : " + ll(L) + ";\n";
    auto walk = [&](bool write) {
      std::ostringstream os;
      os << "#pragma unroll 4\n"
         << "    for (long long l = l0; l < l1; ++l) {\n"
         << "      acc = " << K << "_Op()(acc, " << conv_in(read("base + " + at("l") + " * " + ll(inner))) << ");\n";
      if (write) os << "      out[obase + " << at("l") << " * " << ll(inner) << "] = " << conv_out("acc") << ";\n";
      os << "    }\n";
      return os.str();
    };
    std::string params = param_list(OT + "* __restrict__ out, const " + AT + "* __restrict__ carry");
    dev << "__global__ void __launch_bounds__(" << block << ") " << K << "_cols(" << params << ") {\n"
        << "  KF_GRID_STRIDE(t, " << ll(cols * S) << ") {\n"
        << locate << "    " << AT << " acc = " << (S > 1 ? "carry[col * " + ll(S) + " + chunk]" : ident) << ";\n"
        << "    (void)carry;\n"
        << (exclusive ? "    if (chunk == 0) out[obase - " + ll(inner) + "] = " + conv_out(ident) +
                            ";  // position 0: the identity\n"
                      : "")
        << walk(true) << "  }\n"
        << "}\n";
    if (S == 1) {
      mode = "one thread per column";
      host << "  " << K << "_cols<<<kf_grid(" << ll(cols) << ", " << block << "), " << block << ", 0, ctx->stream>>>("
           << args << ", nullptr);\n"
           << "  KF_LAUNCHED();\n";
      launches = 1;
    } else {
      mode = "one thread per column chunk, " + std::to_string(S) + " chunks per column";
      workspace = reduce::align256(static_cast<size_t>(cols * S) * 8);
      dev << "__global__ void __launch_bounds__(" << block << ") " << K << "_coltot("
          << param_list(AT + "* __restrict__ tot") << ") {\n"
          << "  KF_GRID_STRIDE(t, " << ll(cols * S) << ") {\n"
          << locate << "    " << AT << " acc = " << ident << ";\n"
          << walk(false) << "    tot[col * " << ll(S) << " + chunk] = acc;\n"
          << "  }\n"
          << "}\n"
          << "// Chunk totals -> the exclusive prefix (carry) of each chunk, in place, one thread per column.\n"
          << "__global__ void " << K << "_carries(" << AT << "* __restrict__ tot) {\n"
          << "  KF_GRID_STRIDE(r, " << ll(cols) << ") {\n"
          << "    " << AT << " run = " << ident << ";\n"
          << "    for (long long c = 0; c < " << ll(S) << "; ++c) {\n"
          << "      const " << AT << " t = tot[r * " << ll(S) << " + c];\n"
          << "      tot[r * " << ll(S) << " + c] = run;\n"
          << "      run = " << K << "_Op()(run, t);\n"
          << "    }\n"
          << "  }\n"
          << "}\n";
      host << "  if (ctx->workspace_bytes < " << workspace << "ULL) return kf_fail(3, \"" << K
           << ": workspace of %zu bytes is smaller than the " << workspace << " it needs\", ctx->workspace_bytes);\n"
           << "  " << AT << "* " << K << "_tot = reinterpret_cast<" << AT << "*>(ctx->workspace);\n"
           << "  " << K << "_coltot<<<kf_grid(" << ll(cols * S) << ", " << block << "), " << block
           << ", 0, ctx->stream>>>(" << arg_list(K + "_tot") << ");\n"
           << "  KF_LAUNCHED();\n"
           << "  " << K << "_carries<<<kf_grid(" << ll(cols) << ", 128), 128, 0, ctx->stream>>>(" << K << "_tot);\n"
           << "  KF_LAUNCHED();\n"
           << "  " << K << "_cols<<<kf_grid(" << ll(cols * S) << ", " << block << "), " << block
           << ", 0, ctx->stream>>>(" << args << ", " << K << "_tot);\n"
           << "  KF_LAUNCHED();\n";
      launches = 3;
    }
  }

  KernelSource src = begin_source(ctx, headers);
  std::ostringstream os;
  os << "namespace {\n\n"
     << dev.str() << "\n}  // namespace\n\n"
     << "// " << (reverse ? "reverse " : "")
     << (logadd ? "logcumsumexp"
         : prod ? "cumprod"
                : "cumsum")
     << " over [" << outer << ", " << L << ", " << inner << "]: " << mode << "\n"
     << ctx.signature() << " {\n"
     << host.str() << "  return 0;\n}\n";
  src.code += os.str();
  src.launches = launches;
  src.workspace_bytes = workspace;
  return src;
}

}  // namespace kforge::codegen
