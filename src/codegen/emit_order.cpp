// Order family (sort, argsort, topk and its indices) and running extremes (cummax, cummin and their
// indices): per-row kernels over x viewed as (outer, n, inner), a row being the n elements along dim.
//
// Sort order is a total order: by key (NaN above every number, as torch sorts it), ties by input
// position, so the result is the stable sort's (torch's with stable=True; torch's default sort may order
// equal keys otherwise, so only their values are guaranteed to agree). A row of up to kBitonicMax elements
// is sorted by one block in shared memory (bitonic sort of the row padded to a power of two); a longer row
// ranks every element by counting the elements that sort before it (tiles staged in shared memory,
// O(n^2) comparisons per row: correct for any length, slow for very long rows). topk keeps the first k
// of the descending (largest) or ascending order.
#include <algorithm>
#include <sstream>

#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

using layout::prod;

constexpr int64_t kBitonicMax = 4096;  // keys of 8 bytes and int indices: 48 KiB of shared memory
constexpr int kRankBlock = 256;

struct Row {
  int64_t outer = 1, n = 1, inner = 1;
};

Row row_of(const ir::Shape& s, int64_t dim_attr) {
  if (s.empty()) return Row{};
  const size_t d = static_cast<size_t>(layout::norm_dim(dim_attr, s.size()));
  return Row{prod(s, 0, d), s[d], prod(s, d + 1)};
}

// The key type rows are compared in and the conversion of an element to it.
std::string key_type(ir::DType t) {
  if (t == ir::DType::kFloat64) return "double";
  if (ir::is_floating(t)) return "float";
  if (t == ir::DType::kBool) return "int";
  return "int64_t";
}

// Device functions kf_key(element) and kf_before(ka, ia, kb, ib): whether (ka at position ia) sorts
// before (kb at ib) in the kernel's order.
std::string order_functions(ir::DType t, bool descending) {
  const std::string K = key_type(t);
  const bool fp = ir::is_floating(t);
  std::ostringstream os;
  os << "__device__ __forceinline__ " << K << " kf_key(" << ctype(t) << " v) { return (" << K << ")"
     << (layout::is_half(t) ? "(float)" : "") << "v; }\n"
     << "__device__ __forceinline__ bool kf_above(" << K << " a, " << K << " b) { return "
     << (fp ? "(isnan(a) && !isnan(b)) || a > b" : "a > b") << "; }\n"
     << "__device__ __forceinline__ bool kf_same(" << K << " a, " << K << " b) { return "
     << (fp ? "(isnan(a) && isnan(b)) || a == b" : "a == b") << "; }\n"
     << "__device__ __forceinline__ bool kf_before(" << K << " ka, int64_t ia, " << K << " kb, int64_t ib) {\n"
     << "  return " << (descending ? "kf_above(ka, kb)" : "kf_above(kb, ka)") << " || (kf_same(ka, kb) && ia < ib);\n"
     << "}\n";
  return os.str();
}

// The statements that write position `p` of the row's output from input position `j` (a value or an index).
std::string store(bool indices, const std::string& p, const std::string& j) {
  if (indices) return "out[obase + (" + p + ") * inner] = (int64_t)(" + j + ");";
  return "out[obase + (" + p + ") * inner] = in0[base + (int64_t)(" + j + ") * inner];";
}

// One row-sorting kernel: its definition and the statements that launch it.
struct RowKernel {
  std::string code, launch;
};

// What the two row kernels share: the rows, their key type, the kept count m and the per-row offsets.
struct SortRows {
  const EmitContext& ctx;
  Row r;
  int64_t rows = 0, m = 0;
  bool indices = false;
  std::string K, params, row_setup;
};

RowKernel bitonic_rows(const SortRows& s) {
  const EmitContext& ctx = s.ctx;
  const Row& r = s.r;
  const int64_t rows = s.rows, m = s.m;
  const std::string &K = s.K, &params = s.params, &row_setup = s.row_setup;
  const bool indices = s.indices;
  RowKernel k;
  std::ostringstream os;
  int64_t P = 1;
  while (P < r.n) P *= 2;
  const int block = static_cast<int>(std::clamp<int64_t>(P / 2, 32, 1024));
  os << "// " << rows << " rows of " << r.n << ": bitonic sort of " << P << " slots per block, the first " << m
     << " kept\n"
     << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(" << params << ") {\n"
     << "  __shared__ " << K << " keys[" << P << "];\n"
     << "  __shared__ int pos[" << P << "];\n"
     << "  for (int64_t row = blockIdx.x; row < " << rows << "LL; row += gridDim.x) {\n"
     << row_setup << "    __syncthreads();\n"
     << "    for (int t = threadIdx.x; t < " << P << "; t += blockDim.x) {\n"
     << "      pos[t] = t;\n"
     << "      keys[t] = t < " << r.n << " ? kf_key(in0[base + (int64_t)t * inner]) : (" << K << ")0;\n"
     << "    }\n"
     << "    for (int size = 2; size <= " << P << "; size <<= 1) {\n"
     << "      for (int stride = size >> 1; stride > 0; stride >>= 1) {\n"
     << "        __syncthreads();\n"
     << "        for (int t = threadIdx.x; t < " << P / 2 << "; t += blockDim.x) {\n"
     << "          const int a = 2 * t - (t & (stride - 1)), b = a + stride;\n"
     << "          const int ia = pos[a], ib = pos[b];\n"
     << "          // padding slots (position >= n) sort after every element, in position order\n"
     << "          const bool b_first = ib < " << r.n << " ? (ia >= " << r.n
     << " || kf_before(keys[b], ib, keys[a], ia)) : (ia >= " << r.n << " && ib < ia);\n"
     << "          if (b_first == ((a & size) == 0)) {\n"
     << "            const " << K << " k = keys[a];\n"
     << "            keys[a] = keys[b];\n"
     << "            keys[b] = k;\n"
     << "            pos[a] = ib;\n"
     << "            pos[b] = ia;\n"
     << "          }\n"
     << "        }\n"
     << "      }\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    for (int p = threadIdx.x; p < " << m << "; p += blockDim.x) " << store(indices, "p", "pos[p]") << "\n"
     << "  }\n"
     << "}\n";
  k.launch = "  " + ctx.kernel.name + "_kernel<<<kf_grid(" + std::to_string(rows) + "LL, 1), " + std::to_string(block) +
             ", 0, ctx->stream>>>(" + ctx.in_ptr(0) + ", " + ctx.out_ptr() + ");\n";
  k.code = os.str();
  return k;
}

RowKernel rank_rows(const SortRows& s) {
  const EmitContext& ctx = s.ctx;
  const Row& r = s.r;
  const int64_t rows = s.rows, m = s.m;
  const std::string &K = s.K, &params = s.params, &row_setup = s.row_setup;
  const bool indices = s.indices;
  RowKernel k;
  std::ostringstream os;
  const int64_t chunks = (r.n + kRankBlock - 1) / kRankBlock;
  os << "// " << rows << " rows of " << r.n << ": each element's rank counted over the row in tiles of " << kRankBlock
     << ", the first " << m << " kept\n"
     << "__global__ void __launch_bounds__(" << kRankBlock << ") " << ctx.kernel.name << "_kernel(" << params << ") {\n"
     << "  __shared__ " << K << " tile[" << kRankBlock << "];\n"
     << "  for (int64_t w = blockIdx.x; w < " << rows * chunks << "LL; w += gridDim.x) {\n"
     << "    const int64_t row = w / " << chunks << "LL;\n"
     << row_setup << "    const int64_t j = (w % " << chunks << "LL) * " << kRankBlock << " + threadIdx.x;\n"
     << "    const bool mine = j < " << r.n << "LL;\n"
     << "    const " << K << " key = mine ? kf_key(in0[base + j * inner]) : (" << K << ")0;\n"
     << "    int64_t rank = 0;\n"
     << "    for (int64_t t0 = 0; t0 < " << r.n << "LL; t0 += " << kRankBlock << ") {\n"
     << "      __syncthreads();\n"
     << "      if (t0 + threadIdx.x < " << r.n
     << "LL) tile[threadIdx.x] = kf_key(in0[base + (t0 + threadIdx.x) * inner]);\n"
     << "      __syncthreads();\n"
     << "      const int lim = " << r.n << "LL - t0 < " << kRankBlock << " ? (int)(" << r.n
     << "LL - t0) : " << kRankBlock << ";\n"
     << "      if (mine && rank < " << m << "LL)\n"
     << "        for (int e = 0; e < lim; ++e) rank += kf_before(tile[e], t0 + e, key, j) ? 1 : 0;\n"
     << "    }\n"
     << "    if (mine && rank < " << m << "LL) " << store(indices, "rank", "j") << "\n"
     << "  }\n"
     << "}\n";
  k.launch = "  " + ctx.kernel.name + "_kernel<<<kf_grid(" + std::to_string(rows * chunks) + "LL, 1), " +
             std::to_string(kRankBlock) + ", 0, ctx->stream>>>(" + ctx.in_ptr(0) + ", " + ctx.out_ptr() + ");\n";
  k.code = os.str();
  return k;
}

KernelSource emit_sort_rows(const EmitContext& ctx, bool descending, bool indices, int64_t m) {
  const ir::TensorType& x = ctx.in_type(0);
  SortRows s{ctx, row_of(x.shape, ctx.node().attrs.i("dim")), 0, m, indices, key_type(x.dtype), "", ""};
  const Row& r = s.r;
  s.rows = r.outer * r.inner;
  s.params = "const " + ctype(x.dtype) + "* __restrict__ in0, " + ctype(ctx.out_type().dtype) + "* __restrict__ out";
  s.row_setup = "    const int64_t o = row / " + std::to_string(r.inner) + "LL, q = row % " + std::to_string(r.inner) +
                "LL;\n    const int64_t inner = " + std::to_string(r.inner) + "LL;\n    const int64_t base = o * " +
                std::to_string(r.n * r.inner) + "LL + q, obase = o * " + std::to_string(m * r.inner) + "LL + q;\n";
  const RowKernel k = r.n <= kBitonicMax ? bitonic_rows(s) : rank_rows(s);
  KernelSource src = begin_source(ctx, layout::half_headers(ctx));
  src.code += "namespace {\n" + order_functions(x.dtype, descending) + k.code + "}  // namespace\n\n" +
              ctx.signature() + " {\n" + k.launch + "  KF_LAUNCHED();\n  return 0;\n}\n";
  return src;
}

}  // namespace

StatusOr<KernelSource> emit_Order(const EmitContext& ctx) {
  if (ctx.out_type().numel() == 0) return layout::empty_kernel(ctx);
  const ir::Attrs& a = ctx.node().attrs;
  const Row r = row_of(ctx.in_type(0).shape, a.i("dim"));
  switch (ctx.node().op) {
    case ir::OpId::kSort: return emit_sort_rows(ctx, a.b("descending"), false, r.n);
    case ir::OpId::kArgsort: return emit_sort_rows(ctx, a.b("descending"), true, r.n);
    case ir::OpId::kTopk: return emit_sort_rows(ctx, a.b("largest"), false, a.i("k"));
    case ir::OpId::kTopkIndices: return emit_sort_rows(ctx, a.b("largest"), true, a.i("k"));
    default: return internal_error("emit_Order: " + ir::describe(ctx.graph, ctx.node()) + " is not an order op");
  }
}

StatusOr<KernelSource> emit_CumExtreme(const EmitContext& ctx) {
  // Ties take the later position and a NaN sticks (torch's rule). Rows along the innermost dim: one warp per
  // row, 32 consecutive positions at a time (coalesced), a shuffle scan of (value, position) pairs carried from
  // chunk to chunk. Rows with an inner stride (a dim before the last): one thread per row walks it in order,
  // coalesced over consecutive rows.
  const ir::TensorType& x = ctx.in_type(0);
  if (x.numel() == 0) return layout::empty_kernel(ctx);
  const ir::OpId op = ctx.node().op;
  const bool indices = op == ir::OpId::kCummaxIndices || op == ir::OpId::kCumminIndices;
  const bool max = op == ir::OpId::kCummax || op == ir::OpId::kCummaxIndices;
  const Row r = row_of(x.shape, ctx.node().attrs.i("dim"));
  const std::string K = key_type(x.dtype);
  const bool fp = ir::is_floating(x.dtype);
  const std::string cmp = max ? ">=" : "<=";
  const std::string load_cast = "(" + K + ")" + (layout::is_half(x.dtype) ? "(float)" : "");
  const std::string name = ctx.kernel.name;
  const int64_t rows = r.outer * r.inner;
  const bool warp_rows = r.inner == 1;
  std::ostringstream body;
  if (warp_rows) {
    // (v, at) of a later position replaces the running (best, best_at) by torch's rule; at < 0 is no position
    // (past the row's end), which never replaces and is always replaced.
    const std::string takes = fp ? "at >= 0 && (best_at < 0 || isnan(v) || (!isnan(best) && v " + cmp + " best))"
                                 : "at >= 0 && (best_at < 0 || v " + cmp + " best)";
    body << "  const int lane = threadIdx.x & 31;\n"
         << "  for (int64_t row = blockIdx.x * 8LL + (threadIdx.x >> 5); row < " << rows
         << "LL; row += gridDim.x * 8LL) {\n"
         << "    const int64_t base = row * " << r.n << "LL;\n"
         << "    " << K << " run = 0;\n"
         << "    int64_t run_at = -1;\n"
         << "    for (int64_t q = 0; q < " << r.n << "LL; q += 32) {\n"
         << "      const int64_t j = q + lane;\n"
         << "      " << K << " v = j < " << r.n << "LL ? " << load_cast << "in0[base + j] : (" << K << ")0;\n"
         << "      int64_t at = j < " << r.n << "LL ? j : -1;\n"
         << "#pragma unroll\n"
         << "      for (int d = 1; d < 32; d <<= 1) {\n"
         << "        const " << K << " best = __shfl_up_sync(0xffffffffu, v, d);\n"
         << "        const int64_t best_at = __shfl_up_sync(0xffffffffu, at, d);\n"
         << "        if (lane >= d && !(" << takes << ")) {\n"
         << "          v = best;\n"
         << "          at = best_at;\n"
         << "        }\n"
         << "      }\n"
         << "      {\n"
         << "        const " << K << " best = run;\n"
         << "        const int64_t best_at = run_at;\n"
         << "        if (!(" << takes << ")) {\n"
         << "          v = best;\n"
         << "          at = best_at;\n"
         << "        }\n"
         << "      }\n"
         << "      if (j < " << r.n << "LL) out[base + j] = " << (indices ? "at" : "in0[base + at]") << ";\n"
         << "      run = __shfl_sync(0xffffffffu, v, 31);\n"
         << "      run_at = __shfl_sync(0xffffffffu, at, 31);\n"
         << "    }\n"
         << "  }\n";
  } else {
    body << "  KF_GRID_STRIDE(i, " << rows << "LL) {\n"
         << "    const int64_t o = i / " << r.inner << "LL, q = i % " << r.inner << "LL;\n"
         << "    const int64_t base = o * " << r.n * r.inner << "LL + q;\n"
         << "    " << K << " best = 0;\n"
         << "    int64_t at = 0;\n"
         << "    for (int64_t j = 0; j < " << r.n << "LL; ++j) {\n"
         << "      const " << K << " v = " << load_cast << "in0[base + j * " << r.inner << "LL];\n"
         << "      if (j == 0 || " << (fp ? "isnan(v) || (!isnan(best) && v " + cmp + " best)" : "v " + cmp + " best")
         << ") {\n"
         << "        best = v;\n"
         << "        at = j;\n"
         << "      }\n"
         << "      out[base + j * " << r.inner
         << "LL] = " << (indices ? "at" : "in0[base + at * " + std::to_string(r.inner) + "LL]") << ";\n"
         << "    }\n"
         << "  }\n";
  }
  // The grid covers the rows (a warp or a thread each), not the output's elements: a kernel of its own.
  const std::string grid = warp_rows ? std::to_string(std::min<int64_t>((rows + 7) / 8, 4224))
                                     : "kf_grid(" + std::to_string(rows) + "LL, 256)";
  KernelSource src = begin_source(ctx, layout::half_headers(ctx));
  std::ostringstream os;
  os << "namespace {\n"
     << "// running " << (max ? "max" : "min") << (indices ? " position" : "") << " along " << rows << " rows of "
     << r.n << " (inner stride " << r.inner << "): " << (warp_rows ? "one warp per row" : "one thread per row") << "\n"
     << "__global__ void __launch_bounds__(256) " << name << "_kernel(const " << ctype(x.dtype)
     << "* __restrict__ in0, " << ctype(ctx.out_type().dtype) << "* __restrict__ out) {\n"
     << body.str() << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  " << name << "_kernel<<<" << grid << ", 256, 0, ctx->stream>>>(" << ctx.in_ptr(0) << ", " << ctx.out_ptr()
     << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  return src;
}

}  // namespace kforge::codegen
