// Einsum: a direct contraction for any equation without ellipsis. Every subscript letter gets a
// size (the largest over the operands: size-1 dims broadcast) and, in each operand, a stride (the
// sum of the strides of the dims it labels, so a letter repeated within one operand walks the
// diagonal; 0 where the operand lacks it or has size 1 there). Letters of the output index the
// output; all others are summed over.
//
// Three shapes of kernel, chosen from the sizes:
//   - thread per output, nested loops over the summed letters (many outputs);
//   - a warp or block per output with a shuffle reduction over the flattened summed letters (few
//     outputs, long sums: traces, full sums, matrix-vector);
//   - two operands with large output and sum extents: a tiled GEMM (128x128 output tiles, k-steps
//     of 8 through shared memory, 8x8 per thread) over the letter groups batch (in A, B and out),
//     M (A and out), N (B and out) and K (summed), offsets by baked index arithmetic.
// Arithmetic in float (double for float64 output, int64 for integer output), products of the
// operands in operand order, accumulated in the sum order of the kernel.
#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/gemm_emit.h"
#include "ir/shape_rules.h"

namespace kforge::codegen {

namespace {

using ir::DType;
using ir::Shape;

bool is_half(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16;
}

std::string compute_type(DType t) {
  if (t == DType::kFloat64) return "double";
  if (ir::is_floating(t)) return "float";
  return "int64_t";
}

std::string load_expr(const std::string& v, DType t, const std::string& T) {
  return is_half(t) ? "(" + T + ")(float)(" + v + ")" : "(" + T + ")(" + v + ")";
}

std::string store_expr(const std::string& v, DType t) {
  if (t == DType::kFloat16) return "__float2half((float)(" + v + "))";
  if (t == DType::kBFloat16) return "__float2bfloat16((float)(" + v + "))";
  if (t == DType::kBool) return "((" + v + ") != 0)";
  return "(" + ctype(t) + ")(" + v + ")";
}

std::string L(int64_t v) {
  return std::to_string(v) + "LL";
}
// A literal of the direct kernel's index type: 32-bit when every offset fits (`wide` false).
std::string Lw(int64_t v, bool wide) {
  return wide ? L(v) : std::to_string(v);
}

// Offset of flat index `v` over letters of `sizes` (row-major, last fastest) in an operand whose
// strides for those letters are `strides`; letters of stride 0 drop out and runs that are
// contiguous in the operand merge into one coordinate.
std::string offset_expr(const std::string& v, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        bool wide = true) {
  // Merge: (size, stride, inner product of sizes after the run)
  struct Run {
    int64_t size, stride, inner;
  };
  std::vector<Run> runs;
  int64_t inner = 1;
  for (size_t j = sizes.size(); j-- > 0;) {
    if (sizes[j] == 1) continue;
    if (!runs.empty() && strides[j] != 0 && runs.back().stride != 0 &&
        strides[j] == runs.back().stride * runs.back().size && runs.back().inner * runs.back().size == inner) {
      runs.back().size *= sizes[j];
    } else if (!runs.empty() && strides[j] == 0 && runs.back().stride == 0 &&
               runs.back().inner * runs.back().size == inner) {
      runs.back().size *= sizes[j];
    } else {
      runs.push_back({sizes[j], strides[j], inner});
    }
    inner *= sizes[j];
  }
  std::string e;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->stride == 0) continue;
    std::string c = it->inner == 1 ? v : "(" + v + " / " + Lw(it->inner, wide) + ")";
    if (it->inner * it->size != inner) c = "(" + c + " % " + Lw(it->size, wide) + ")";
    if (!e.empty()) e += " + ";
    e += c;
    if (it->stride != 1) e += " * " + Lw(it->stride, wide);
  }
  return e.empty() ? Lw(0, wide) : e;
}

KernelSource empty_kernel(const EmitContext& ctx) {
  KernelSource src = begin_source(ctx);
  src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

struct Plan {
  ir::EinsumSpec spec;
  std::string out_letters;  // the output subscripts, in order
  std::string sum_letters;  // the summed ones, in order of first appearance
  std::map<char, int64_t> size;
  std::vector<std::map<char, int64_t>> stride;  // per operand; absent = 0
  int64_t st(size_t k, char c) const {
    auto it = stride[k].find(c);
    return it == stride[k].end() ? 0 : it->second;
  }
};

std::vector<int64_t> sizes_of(const Plan& p, const std::string& letters) {
  std::vector<int64_t> s;
  for (char c : letters) s.push_back(p.size.at(c));
  return s;
}

std::vector<int64_t> strides_of(const Plan& p, size_t k, const std::string& letters) {
  std::vector<int64_t> s;
  for (char c : letters) s.push_back(p.st(k, c));
  return s;
}

int64_t prod(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

std::string params(const EmitContext& ctx) {
  std::ostringstream os;
  for (size_t k = 0; k < ctx.node().inputs.size(); ++k)
    os << "const " << ctype(ctx.in_type(k).dtype) << "* __restrict__ in" << k << ", ";
  os << ctype(ctx.out_type().dtype) << "* __restrict__ out";
  return os.str();
}

std::string args(const EmitContext& ctx) {
  std::ostringstream os;
  for (size_t k = 0; k < ctx.node().inputs.size(); ++k) os << ctx.in_ptr(k) << ", ";
  os << ctx.out_ptr();
  return os.str();
}

std::string headers(const EmitContext& ctx) {
  bool half = is_half(ctx.out_type().dtype);
  for (size_t k = 0; k < ctx.node().inputs.size(); ++k) half = half || is_half(ctx.in_type(k).dtype);
  return half ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "";
}

// The product of the operands at offsets base_k + sum-offset_k, in compute type T.
std::string product(const EmitContext& ctx, const std::string& T, const std::vector<std::string>& offsets) {
  std::string e;
  for (size_t k = 0; k < offsets.size(); ++k) {
    std::string ld = load_expr("in" + std::to_string(k) + "[b" + std::to_string(k) + " + " + offsets[k] + "]",
                               ctx.in_type(k).dtype, T);
    e += (k ? " * " : "") + ld;
  }
  return e;
}

KernelSource direct_kernel(const EmitContext& ctx, const Plan& p, int group) {
  const size_t nops = ctx.node().inputs.size();
  int64_t n = ctx.out_type().numel();
  DType ot = ctx.out_type().dtype;
  std::string T = compute_type(ot);
  auto osz = sizes_of(p, p.out_letters);
  auto ssz = sizes_of(p, p.sum_letters);
  int64_t nsum = prod(ssz);
  int block = group == 256 ? 256 : static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  // 32-bit index arithmetic when every index and offset fits.
  int64_t biggest = std::max(n * group, nsum);
  for (size_t op = 0; op < nops; ++op) biggest = std::max(biggest, ctx.in_type(op).numel());
  const bool wide = biggest >= static_cast<int64_t>(INT_MAX) / 2;
  const std::string I = wide ? "int64_t" : "int";
  auto lit = [&](int64_t v) { return Lw(v, wide); };
  std::ostringstream k;
  k << "namespace {\n"
    << "// einsum '" << ctx.node().attrs.s("equation") << "': output letters '" << p.out_letters << "' "
    << ir::shape_str(osz) << ", summed letters '" << p.sum_letters << "' " << ir::shape_str(ssz) << ", " << group
    << " thread" << (group == 1 ? "" : "s") << " per output\n"
    << "typedef " << T << " T;\n"
    << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(" << params(ctx) << ") {\n";
  std::string ind = "    ";
  if (group == 1) {
    k << "  KF_GRID_STRIDE(w_, " << L(n) << ") {\n"
      << "    const " << I << " w = (" << I << ")w_;\n";
  } else if (group == 32) {
    k << "  const int lane = threadIdx.x & 31;\n"
      << "  for (" << I << " w = (" << I << ")((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5); w < " << lit(n)
      << "; w += (" << I << ")((gridDim.x * (int64_t)blockDim.x) >> 5)) {\n";
  } else {
    k << "  __shared__ T partial_[8];\n"
      << "  const int lane = threadIdx.x;\n"
      << "  for (" << I << " w = blockIdx.x; w < " << lit(n) << "; w += gridDim.x) {\n";
  }
  for (size_t op = 0; op < nops; ++op) {
    k << ind << "const " << I << " b" << op << " = " << offset_expr("w", osz, strides_of(p, op, p.out_letters), wide)
      << ";\n";
  }
  k << ind << "T acc = (T)0;\n";
  if (group == 1) {
    // Nested loops over the summed letters, the offsets as sums of coordinate times stride.
    std::vector<std::string> offs(nops);
    for (size_t j = 0; j < p.sum_letters.size(); ++j) {
      char c = p.sum_letters[j];
      std::string v = std::string("c_") + c;
      k << ind << "for (" << I << " " << v << " = 0; " << v << " < " << lit(p.size.at(c)) << "; ++" << v << ") {\n";
      ind += "  ";
      for (size_t op = 0; op < nops; ++op) {
        int64_t s = p.st(op, c);
        if (s == 0) continue;
        offs[op] += (offs[op].empty() ? "" : " + ") + v + (s == 1 ? "" : " * " + lit(s));
      }
    }
    for (auto& o : offs) {
      if (o.empty()) o = "0";
    }
    if (p.sum_letters.empty()) {
      k << ind << "acc = " << product(ctx, T, offs) << ";\n";
    } else {
      k << ind << "acc += " << product(ctx, T, offs) << ";\n";
      for (size_t j = 0; j < p.sum_letters.size(); ++j) {
        ind.resize(ind.size() - 2);
        k << ind << "}\n";
      }
    }
    k << ind << "out[w] = " << store_expr("acc", ot) << ";\n";
  } else {
    std::vector<std::string> offs(nops);
    for (size_t op = 0; op < nops; ++op) offs[op] = offset_expr("f", ssz, strides_of(p, op, p.sum_letters), wide);
    k << ind << "for (" << I << " f = lane; f < " << lit(nsum) << "; f += " << group << ") {\n"
      << ind << "  acc += " << product(ctx, T, offs) << ";\n"
      << ind << "}\n"
      << ind << "#pragma unroll\n"
      << ind << "for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);\n";
    if (group == 256) {
      k << ind << "if ((lane & 31) == 0) partial_[lane >> 5] = acc;\n"
        << ind << "__syncthreads();\n"
        << ind << "if (lane < 32) {\n"
        << ind << "  acc = lane < 8 ? partial_[lane] : (T)0;\n"
        << ind << "  #pragma unroll\n"
        << ind << "  for (int off = 4; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);\n"
        << ind << "}\n"
        << ind << "__syncthreads();\n";
    }
    k << ind << "if (lane == 0) out[w] = " << store_expr("acc", ot) << ";\n";
  }
  k << "  }\n"
    << "}\n"
    << "}  // namespace\n\n";
  KernelSource src = begin_source(ctx, headers(ctx));
  src.code += k.str();
  std::ostringstream l;
  l << ctx.signature() << " {\n";
  if (group == 256) {
    l << "  " << ctx.kernel.name << "_kernel<<<(unsigned int)(" << L(n) << " < 132LL * 16 ? " << L(n)
      << " : 132LL * 16), 256, 0, ctx->stream>>>(";
  } else {
    l << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << L(n * group) << ", " << block << "), " << block
      << ", 0, ctx->stream>>>(";
  }
  l << args(ctx) << ");\n"
    << "  KF_LAUNCHED();\n"
    << "  return 0;\n"
    << "}\n";
  src.code += l.str();
  return src;
}

// Two operands as a batched GEMM over letter groups; see the file comment.
KernelSource tiled_kernel(const EmitContext& ctx, const Plan& p, const std::string& batch, const std::string& mg,
                          const std::string& ng, const std::string& kg) {
  DType ot = ctx.out_type().dtype;
  std::string T = compute_type(ot);
  auto bsz = sizes_of(p, batch), msz = sizes_of(p, mg), nsz = sizes_of(p, ng), ksz = sizes_of(p, kg);
  int64_t NB = prod(bsz), M = prod(msz), N = prod(nsz), K = prod(ksz);
  // Output strides of the letters (contiguous output in out_letters order).
  std::map<char, int64_t> ost;
  {
    int64_t s = 1;
    for (size_t j = p.out_letters.size(); j-- > 0;) {
      ost[p.out_letters[j]] = p.size.at(p.out_letters[j]) == 1 ? 0 : s;
      s *= p.size.at(p.out_letters[j]);
    }
  }
  auto out_strides = [&](const std::string& letters) {
    std::vector<int64_t> s;
    for (char c : letters) s.push_back(ost[c]);
    return s;
  };
  // Whether A is contiguous along k (then threads of a warp read consecutive k) or along m, and B
  // along n or k.
  auto a_k = strides_of(p, 0, kg), a_m = strides_of(p, 0, mg);
  auto b_k = strides_of(p, 1, kg), b_n = strides_of(p, 1, ng);
  bool a_kfast = !kg.empty() && a_k.back() == 1;
  bool b_nfast = !(!kg.empty() && b_k.back() == 1) || (!ng.empty() && b_n.back() == 1);
  if (!mg.empty() && a_m.back() == 1) a_kfast = false;

  const int64_t tiles_m = (M + 127) / 128, tiles_n = (N + 127) / 128;
  const int64_t tiles = tiles_m * tiles_n * NB;
  std::string ta = ctype(ctx.in_type(0).dtype), tb = ctype(ctx.in_type(1).dtype);
  std::ostringstream k;
  k << "namespace {\n"
    << "// einsum '" << ctx.node().attrs.s("equation") << "' as a batched GEMM: batch '" << batch << "' "
    << ir::shape_str(bsz) << ", M '" << mg << "' " << ir::shape_str(msz) << ", N '" << ng << "' " << ir::shape_str(nsz)
    << ", K '" << kg << "' " << ir::shape_str(ksz) << "\n"
    << "typedef " << T << " T;\n"
    << "__device__ __forceinline__ int64_t a_k_(int64_t k) { return " << offset_expr("k", ksz, a_k) << "; }\n"
    << "__device__ __forceinline__ int64_t b_k_(int64_t k) { return " << offset_expr("k", ksz, b_k) << "; }\n"
    << "__global__ void __launch_bounds__(256) " << ctx.kernel.name << "_kernel(const " << ta
    << "* __restrict__ in0, const " << tb << "* __restrict__ in1, " << ctype(ot) << "* __restrict__ out) {\n"
    << "  __shared__ T As[8][132];\n"
    << "  __shared__ T Bs[8][132];\n"
    << "  const int t = threadIdx.x, tx = t & 15, ty = t >> 4;\n"
    << "  for (int64_t tile = blockIdx.x; tile < " << L(tiles) << "; tile += gridDim.x) {\n"
    << "    const int64_t tn = tile % " << L(tiles_n) << ";\n"
    << "    const int64_t tm = (tile / " << L(tiles_n) << ") % " << L(tiles_m) << ";\n"
    << "    const int64_t bt = tile / " << L(tiles_n * tiles_m) << ";\n"
    << "    const int64_t m0 = tm * 128, n0 = tn * 128;\n"
    << "    const int64_t a_base = " << offset_expr("bt", bsz, strides_of(p, 0, batch)) << ";\n"
    << "    const int64_t b_base = " << offset_expr("bt", bsz, strides_of(p, 1, batch)) << ";\n"
    << "    const int64_t o_base = " << offset_expr("bt", bsz, out_strides(batch))
    << ";\n"
    // Each thread loads 4 elements of each tile: element e = t + 256 * j of the 128x8 tile.
    << "    int64_t a_row[4], b_col[4];\n"
    << "    bool a_ok[4], b_ok[4];\n"
    << "    int a_ml[4], a_kl[4], b_nl[4], b_kl[4];\n"
    << "    #pragma unroll\n"
    << "    for (int j = 0; j < 4; ++j) {\n"
    << "      const int e = t + 256 * j;\n";
  if (a_kfast) {
    k << "      a_ml[j] = e >> 3; a_kl[j] = e & 7;\n";
  } else {
    k << "      a_ml[j] = e & 127; a_kl[j] = e >> 7;\n";
  }
  if (b_nfast) {
    k << "      b_nl[j] = e & 127; b_kl[j] = e >> 7;\n";
  } else {
    k << "      b_nl[j] = e >> 3; b_kl[j] = e & 7;\n";
  }
  k << "      const int64_t m = m0 + a_ml[j], nn = n0 + b_nl[j];\n"
    << "      a_ok[j] = m < " << L(M) << ";\n"
    << "      b_ok[j] = nn < " << L(N) << ";\n"
    << "      a_row[j] = a_base + (a_ok[j] ? " << offset_expr("m", msz, a_m) << " : 0);\n"
    << "      b_col[j] = b_base + (b_ok[j] ? " << offset_expr("nn", nsz, b_n) << " : 0);\n"
    << "    }\n"
    << "    T acc[8][8];\n"
    << "    #pragma unroll\n"
    << "    for (int i = 0; i < 8; ++i)\n"
    << "      #pragma unroll\n"
    << "      for (int jj = 0; jj < 8; ++jj) acc[i][jj] = (T)0;\n"
    << "    T ra[4], rb[4];\n"
    << "    #pragma unroll\n"
    << "    for (int j = 0; j < 4; ++j) {\n"
    << "      const int64_t ka = a_kl[j], kb = b_kl[j];\n"
    << "      ra[j] = (a_ok[j] && ka < " << L(K) << ") ? "
    << load_expr("in0[a_row[j] + a_k_(ka)]", ctx.in_type(0).dtype, "T") << " : (T)0;\n"
    << "      rb[j] = (b_ok[j] && kb < " << L(K) << ") ? "
    << load_expr("in1[b_col[j] + b_k_(kb)]", ctx.in_type(1).dtype, "T") << " : (T)0;\n"
    << "    }\n"
    << "    for (int64_t k0 = 0; k0 < " << L(K) << "; k0 += 8) {\n"
    << "      #pragma unroll\n"
    << "      for (int j = 0; j < 4; ++j) {\n"
    << "        As[a_kl[j]][a_ml[j]] = ra[j];\n"
    << "        Bs[b_kl[j]][b_nl[j]] = rb[j];\n"
    << "      }\n"
    << "      __syncthreads();\n"
    << "      if (k0 + 8 < " << L(K) << ") {\n"
    << "        #pragma unroll\n"
    << "        for (int j = 0; j < 4; ++j) {\n"
    << "          const int64_t ka = k0 + 8 + a_kl[j], kb = k0 + 8 + b_kl[j];\n"
    << "          ra[j] = (a_ok[j] && ka < " << L(K) << ") ? "
    << load_expr("in0[a_row[j] + a_k_(ka)]", ctx.in_type(0).dtype, "T") << " : (T)0;\n"
    << "          rb[j] = (b_ok[j] && kb < " << L(K) << ") ? "
    << load_expr("in1[b_col[j] + b_k_(kb)]", ctx.in_type(1).dtype, "T") << " : (T)0;\n"
    << "        }\n"
    << "      }\n"
    << "      #pragma unroll\n"
    << "      for (int kk = 0; kk < 8; ++kk) {\n"
    << "        T a[8], b[8];\n"
    << "        #pragma unroll\n"
    << "        for (int i = 0; i < 8; ++i) a[i] = As[kk][ty + 16 * i];\n"
    << "        #pragma unroll\n"
    << "        for (int jj = 0; jj < 8; ++jj) b[jj] = Bs[kk][tx + 16 * jj];\n"
    << "        #pragma unroll\n"
    << "        for (int i = 0; i < 8; ++i)\n"
    << "          #pragma unroll\n"
    << "          for (int jj = 0; jj < 8; ++jj) acc[i][jj] = fma(a[i], b[jj], acc[i][jj]);\n"
    << "      }\n"
    << "      __syncthreads();\n"
    << "    }\n"
    << "    #pragma unroll\n"
    << "    for (int i = 0; i < 8; ++i) {\n"
    << "      const int64_t m = m0 + ty + 16 * i;\n"
    << "      if (m >= " << L(M) << ") continue;\n"
    << "      const int64_t orow = o_base + " << offset_expr("m", msz, out_strides(mg)) << ";\n"
    << "      #pragma unroll\n"
    << "      for (int jj = 0; jj < 8; ++jj) {\n"
    << "        const int64_t nn = n0 + tx + 16 * jj;\n"
    << "        if (nn < " << L(N) << ") out[orow + " << offset_expr("nn", nsz, out_strides(ng))
    << "] = " << store_expr("acc[i][jj]", ot) << ";\n"
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "}\n"
    << "}  // namespace\n\n";
  KernelSource src = begin_source(ctx, headers(ctx));
  src.code += k.str();
  std::ostringstream l;
  l << ctx.signature() << " {\n"
    << "  const int64_t tiles = " << L(tiles) << ";\n"
    << "  " << ctx.kernel.name
    << "_kernel<<<(unsigned int)(tiles < 0x7fffffffLL ? tiles : 0x7fffffffLL), 256, 0, ctx->stream>>>(" << args(ctx)
    << ");\n"
    << "  KF_LAUNCHED();\n"
    << "  return 0;\n"
    << "}\n";
  src.code += l.str();
  return src;
}

}  // namespace

// Strategy cublas_gemm (the einsum_gemm skill): the einsum as one row-major (strided batched) cuBLAS
// GEMM on the operands as stored (ir::einsum_as_gemm).
static StatusOr<KernelSource> emit_einsum_gemm(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  if (node.inputs.size() != 2) return invalid_argument("einsum as a GEMM takes two operands");
  for (size_t i = 0; i < 2; ++i) {
    if (ctx.in_type(i).dtype != ctx.out_type().dtype)
      return invalid_argument("einsum as a GEMM needs operands of the output's dtype");
  }
  KF_ASSIGN_OR_RETURN(ir::EinsumGemm v, ir::einsum_as_gemm(node.attrs.s("equation"), ctx.in_type(0).shape,
                                                           ctx.in_type(1).shape, ctx.out_type().shape));
  KF_ASSIGN_OR_RETURN(gemm::GemmTypes types, gemm::gemm_types(ctx.out_type().dtype, ctx.sched.precision, "einsum"));
  KernelSource src = begin_source(ctx, gemm::cublas_headers());
  src.libraries = {"cublas"};
  gemm::RowMajorGemm g;
  g.m = v.m;
  g.n = v.n;
  g.k = v.k;
  g.trans_a = v.trans_a;
  g.trans_b = v.trans_b;
  g.lda = v.trans_a ? v.m : v.k;
  g.ldb = v.trans_b ? v.k : v.n;
  g.ldc = v.n;
  g.a = ctx.in_ptr(0);
  g.b = ctx.in_ptr(1);
  g.c = ctx.out_ptr();
  g.batch = v.batch;
  g.stride_a = v.m * v.k;
  g.stride_b = v.k * v.n;
  g.stride_c = v.m * v.n;
  const gemm::SplitScratch scratch = gemm::use_split_scratch(g, types, 0, ctx.kernel.name);
  src.workspace_bytes = scratch.workspace_bytes;
  src.code += scratch.definition + ctx.signature() + " {\n  // einsum '" + node.attrs.s("equation") + "' as " +
              (v.batch > 1 ? std::to_string(v.batch) + " batched GEMMs" : std::string("one GEMM")) +
              ": M = " + std::to_string(v.m) + ", N = " + std::to_string(v.n) + ", K = " + std::to_string(v.k) +
              (v.trans_a ? ", a transposed" : "") + (v.trans_b ? ", b transposed" : "") + " (einsum_gemm skill).\n" +
              gemm::cublas_handle_prologue(ctx.kernel.name) + scratch.check + gemm::gemm_call(g, types, "  ") +
              "  return 0;\n}\n";
  src.launches = gemm::gemm_launches(g, types);
  return src;
}

StatusOr<KernelSource> emit_Einsum(const EmitContext& ctx) {
  if (ctx.kernel.strategy == schedule::Strategy::kCublasGemm) return emit_einsum_gemm(ctx);
  const ir::Node& node = ctx.node();
  const size_t nops = node.inputs.size();
  Plan p;
  KF_ASSIGN_OR_RETURN(p.spec, ir::parse_einsum(node.attrs.s("equation"), nops));
  p.out_letters = p.spec.output;
  std::set<char> seen_out;
  for (char c : p.out_letters) {
    if (!seen_out.insert(c).second)
      return invalid_argument(std::string("einsum output subscript '") + c + "' appears more than once");
  }
  const Shape& oshape = ctx.out_type().shape;
  if (oshape.size() != p.out_letters.size()) return internal_error("einsum output rank does not match its subscripts");
  for (size_t j = 0; j < p.out_letters.size(); ++j) p.size[p.out_letters[j]] = oshape[j];
  p.stride.resize(nops);
  std::set<char> seen_sum;
  for (size_t op = 0; op < nops; ++op) {
    const std::string& sub = p.spec.operands[op];
    const Shape& s = ctx.in_type(op).shape;
    if (s.size() != sub.size())
      return invalid_argument("einsum operand " + std::to_string(op) + " has the wrong rank for '" + sub + "'");
    int64_t stride = 1;
    for (size_t d = sub.size(); d-- > 0;) {
      char c = sub[d];
      if (!seen_out.count(c)) p.size[c] = std::max(p.size[c], s[d]);
      if (s[d] != 1) p.stride[op][c] += stride;
      stride *= s[d];
    }
    for (char c : sub) {
      if (!seen_out.count(c) && seen_sum.insert(c).second) p.sum_letters += c;
    }
  }
  // A size-1 dim of one operand broadcasts; any other size must agree with the letter's size.
  for (size_t op = 0; op < nops; ++op) {
    const std::string& sub = p.spec.operands[op];
    const Shape& s = ctx.in_type(op).shape;
    for (size_t d = 0; d < sub.size(); ++d) {
      if (s[d] != 1 && s[d] != p.size[sub[d]]) {
        return invalid_argument(std::string("einsum subscript '") + sub[d] + "' has sizes " + std::to_string(s[d]) +
                                " and " + std::to_string(p.size[sub[d]]));
      }
    }
  }
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  int64_t nsum = prod(sizes_of(p, p.sum_letters));

  // Two operands with big output and sum extents: the tiled GEMM.
  if (nops == 2 && ir::is_floating(ctx.out_type().dtype) && ctx.kernel.knob(schedule::Knob::kTiled, 1) != 0) {
    std::string batch, mg, ng;
    for (char c : p.out_letters) {
      bool in_a = p.spec.operands[0].find(c) != std::string::npos;
      bool in_b = p.spec.operands[1].find(c) != std::string::npos;
      if (in_a && in_b) {
        batch += c;
      } else if (in_a) {
        mg += c;
      } else {
        ng += c;
      }
    }
    int64_t M = prod(sizes_of(p, mg)), N = prod(sizes_of(p, ng));
    if (M >= 64 && N >= 64 && nsum >= 16 && M * N >= 16384) return tiled_kernel(ctx, p, batch, mg, ng, p.sum_letters);
  }
  int group = 1;
  if (nsum >= 64 && n < 132LL * 2048) group = 32;
  if (nsum >= 65536 && n < 132LL * 8) group = 256;
  group = static_cast<int>(ctx.kernel.knob(schedule::Knob::kGroup, group));
  if (group != 1 && group != 32 && group != 256) return invalid_argument("einsum knob 'group' must be 1, 32 or 256");
  return direct_kernel(ctx, p, group);
}

}  // namespace kforge::codegen
