// Attention (scaled_dot_product_attention): q[..., L, E], k[..., S, E], v[..., S, Ev] -> [..., L, Ev].
// A correct first version in three steps per chunk of batches, scores in ctx->workspace:
//   1. S = scale * Q K^T        cuBLAS strided-batched GEMM (alpha = scale), fp32 scores;
//   2. P = softmax(S + mask)    one block per row: the mask (bool: True keeps; float: added) and
//                               is_causal (keep key j <= query i, torch's top-left tril) are applied
//                               here, a NaN-propagating max, exp, sum, divide; a row with every key
//                               masked gives zeros (torch's _safe_softmax), not NaN;
//   3. O = P V                  cuBLAS strided-batched GEMM.
// k and v batch dims broadcast to q's: a complete or absent (all size-1) batch is a stride (0 for
// absent); any other pattern builds per-batch pointer arrays on the device (cublasGemmBatchedEx).
// The score matrix of all batches can be large (32*32*512*512*4 bytes = 1 GiB); beyond the knob
// "workspace_mb" (default 2048 MiB) batches are processed in chunks that fit it.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"
#include "codegen/gemm_emit.h"

namespace kforge::codegen {

namespace {

int64_t numel_of(const ir::Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// Whether `in` broadcasts to `out` (numpy rules, `in` may have fewer dims).
bool broadcasts_to(const ir::Shape& in, const ir::Shape& out) {
  if (in.size() > out.size()) return false;
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1 && in[d] != out[lead + d]) return false;
  }
  return true;
}

}  // namespace

StatusOr<KernelSource> emit_Attention(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::Shape& sq = ctx.in_type(0).shape;
  const ir::Shape& sk = ctx.in_type(1).shape;
  const ir::Shape& sv = ctx.in_type(2).shape;
  const size_t rank = sq.size();
  if (rank < 2 || sk.size() != rank || sv.size() != rank || sq.back() != sk.back() || sk[rank - 2] != sv[rank - 2]) {
    return invalid_argument("attention shapes q " + ir::shape_str(sq) + ", k " + ir::shape_str(sk) + ", v " +
                            ir::shape_str(sv) + " do not fit");
  }
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.in_type(i).dtype != ir::DType::kFloat32) {
      return unsupported("scaled_dot_product_attention on " + std::string(ir::dtype_name(ctx.in_type(i).dtype)) +
                         " tensors: kforge's attention is written for float32 q, k and v only");
    }
  }
  const int64_t L = sq[rank - 2];
  const int64_t E = sq[rank - 1];
  const int64_t S = sk[rank - 2];
  const int64_t Ev = sv[rank - 1];
  const ir::Shape qb(sq.begin(), sq.end() - 2);
  const ir::Shape kb(sk.begin(), sk.end() - 2);
  const ir::Shape vb(sv.begin(), sv.end() - 2);
  if (!broadcasts_to(kb, qb) || !broadcasts_to(vb, qb)) {
    return unsupported("scaled_dot_product_attention whose k " + ir::shape_str(sk) + " or v " + ir::shape_str(sv) +
                       " batch dims do not broadcast to q's " + ir::shape_str(sq));
  }
  const int64_t Bq = numel_of(qb);
  const int64_t nk = numel_of(kb);
  const int64_t nv = numel_of(vb);

  const bool causal = node.attrs.b("is_causal");
  double scale = node.attrs.is_null("scale") ? 1.0 / std::sqrt(static_cast<double>(E)) : node.attrs.f("scale");
  const bool has_mask = ctx.has_input(3);
  ir::Shape full = qb;
  full.push_back(L);
  full.push_back(S);
  std::string mask_t;
  bool mask_bool = false;
  if (has_mask) {
    const ir::TensorType& mt = ctx.in_type(3);
    if (!broadcasts_to(mt.shape, full)) {
      return invalid_argument("attention mask " + ir::shape_str(mt.shape) + " does not broadcast to the scores " +
                              ir::shape_str(full));
    }
    if (mt.dtype == ir::DType::kBool) {
      mask_bool = true;
    } else if (!ir::is_floating(mt.dtype)) {
      return unsupported("attention mask of dtype " + std::string(ir::dtype_name(mt.dtype)) +
                         ": torch takes bool or float masks");
    }
    mask_t = ctype(mt.dtype);
  }

  if (ctx.out_type().numel() == 0) {
    KernelSource src = begin_source(ctx);
    src.code += "// the result is empty: nothing to compute\n" + ctx.signature() +
                " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
    src.launches = 0;
    return src;
  }
  KF_ASSIGN_OR_RETURN(gemm::GemmTypes types,
                      gemm::gemm_types(ir::DType::kFloat32, ctx.sched.precision, "scaled_dot_product_attention"));

  KernelSource src = begin_source(ctx, gemm::cublas_headers());
  src.libraries = {"cublas"};
  const std::string name = ctx.kernel.name;
  const std::string Q = ctx.in_ptr(0), K = ctx.in_ptr(1), V = ctx.in_ptr(2), O = ctx.out_ptr();
  const size_t out_bytes = ctx.out_type().bytes();

  if (S == 0) {
    // No keys: the softmax has nothing to weigh and P V sums over nothing.
    src.code += ctx.signature() +
                " {\n  // S = 0 keys: the weighted sum over no values is zero.\n  KF_CUDA(cudaMemsetAsync(" + O +
                ", 0, " + std::to_string(out_bytes) + "ULL, ctx->stream));\n  return 0;\n}\n";
    src.launches = 1;
    return src;
  }

  // Chunks of batches whose scores fit the workspace budget.
  const int64_t row_bytes = S * 4;
  const int64_t batch_bytes = L * row_bytes;
  const int64_t budget = ctx.kernel.knob(schedule::Knob::kWorkspaceMb, 2048) * (int64_t{1} << 20);
  const int64_t chunk = std::clamp<int64_t>(budget / std::max<int64_t>(batch_bytes, 1), 1, Bq);
  const int64_t nchunks = (Bq + chunk - 1) / chunk;
  const bool k_linear = nk == 1 || nk == Bq;
  const bool v_linear = nv == 1 || nv == Bq;
  const bool pointers = !(k_linear && v_linear);
  const size_t ptr_bytes = pointers ? gemm::align256(static_cast<size_t>(5 * Bq) * sizeof(void*)) : 0;
  const size_t score_bytes = gemm::align256(static_cast<size_t>(chunk * batch_bytes));
  src.workspace_bytes = ptr_bytes + score_bytes;

  int64_t block = ctx.kernel.knob(schedule::Knob::kSoftmaxBlock, 0);
  if (block <= 0) block = S <= 32 ? 32 : S <= 64 ? 64 : S <= 128 ? 128 : 256;
  if (block % 32 != 0 || block > 1024)
    return invalid_argument("attention knob softmax_block must be a multiple of 32 up to 1024");

  std::ostringstream os;
  os << "namespace {\n"
     << "constexpr int kBlock = " << block << ";\n\n"
     << "// max that propagates NaN (a NaN score makes the whole row NaN, as in torch's softmax)\n"
     << "__device__ __forceinline__ float kf_max_nan(float a, float b) { return (a > b || a != a) ? a : b; }\n\n"
     << "__device__ __forceinline__ float kf_block_max(float v, float* sh) {\n"
     << "  for (int o = 16; o > 0; o >>= 1) v = kf_max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
     << "  __syncthreads();\n"
     << "  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;\n"
     << "  __syncthreads();\n"
     << "  v = sh[0];\n"
     << "  for (int w = 1; w < kBlock / 32; ++w) v = kf_max_nan(v, sh[w]);\n"
     << "  return v;\n"
     << "}\n\n"
     << "__device__ __forceinline__ float kf_block_sum(float v, float* sh) {\n"
     << "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
     << "  __syncthreads();\n"
     << "  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;\n"
     << "  __syncthreads();\n"
     << "  v = sh[0];\n"
     << "  for (int w = 1; w < kBlock / 32; ++w) v += sh[w];\n"
     << "  return v;\n"
     << "}\n\n"
     << "// Row softmax of `rows` score rows of length " << S << " (rows of batches b0.. of this chunk), in place.\n"
     << "__global__ void __launch_bounds__(kBlock) " << name << "_softmax(float* __restrict__ s"
     << (has_mask ? ", const " + mask_t + "* __restrict__ mask" : "") << ", int64_t b0, int64_t rows) {\n"
     << "  __shared__ float sh[kBlock / 32];\n"
     << "  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {\n"
     << "    const int64_t gr = b0 * " << L << "LL + r;  // global row: batch gr / L, query gr % L\n"
     << "    const int64_t l = gr % " << L << "LL;\n"
     << "    (void)l;\n"
     << "    float* p = s + r * " << S << "LL;\n"
     << "    float m = -INFINITY;\n"
     << "    for (int64_t j = threadIdx.x; j < " << S << "LL; j += kBlock) {\n"
     << "      float x = p[j];\n";
  if (has_mask) {
    std::string off = broadcast_offset(ctx.in_type(3).shape, full, "mi");
    os << "      const int64_t mi = gr * " << S << "LL + j;\n"
       << "      (void)mi;\n";
    if (mask_bool) {
      os << "      if (!mask[" << off << "]) x = -INFINITY;\n";
    } else {
      os << "      x += (float)mask[" << off << "];\n";
    }
  }
  if (causal) os << "      if (j > l) x = -INFINITY;  // is_causal: key j is visible to query l when j <= l\n";
  os << "      p[j] = x;\n"
     << "      m = kf_max_nan(m, x);\n"
     << "    }\n"
     << "    m = kf_block_max(m, sh);\n"
     << "    const bool none = m == -INFINITY;  // every key masked: the row's weights are zero\n"
     << "    float sum = 0.f;\n"
     << "    for (int64_t j = threadIdx.x; j < " << S << "LL; j += kBlock) {\n"
     << "      const float e = none ? 0.f : expf(p[j] - m);\n"
     << "      p[j] = e;\n"
     << "      sum += e;\n"
     << "    }\n"
     << "    sum = kf_block_sum(sum, sh);\n"
     << "    for (int64_t j = threadIdx.x; j < " << S << "LL; j += kBlock) p[j] = none ? 0.f : p[j] / sum;\n"
     << "  }\n"
     << "}\n";
  if (pointers) {
    os << "\n// Per-batch pointers: q, k, scores, v, out (k " << ir::shape_str(kb) << " and v " << ir::shape_str(vb)
       << " broadcast to " << ir::shape_str(qb) << ").\n"
       << "__global__ void " << name
       << "_ptrs(const float* q, const float* k, const float* v, float* o, float* s, void** p) {\n"
       << "  KF_GRID_STRIDE(i, " << Bq << "LL) {\n"
       << "    p[i] = (void*)(q + i * " << L * E << "LL);\n"
       << "    p[" << Bq << "LL + i] = (void*)(k + " << broadcast_offset(kb, qb, "i") << " * " << S * E << "LL);\n"
       << "    p[" << 2 * Bq << "LL + i] = (void*)(s + (i % " << chunk << "LL) * " << L * S << "LL);\n"
       << "    p[" << 3 * Bq << "LL + i] = (void*)(v + " << broadcast_offset(vb, qb, "i") << " * " << S * Ev << "LL);\n"
       << "    p[" << 4 * Bq << "LL + i] = (void*)(o + i * " << L * Ev << "LL);\n"
       << "  }\n"
       << "}\n";
  }
  os << "}  // namespace\n\n";

  os << ctx.signature() << " {\n"
     << "  if (ctx->workspace_bytes < " << src.workspace_bytes << "ULL) return kf_fail(2, \"" << name
     << ": workspace of %zu bytes is smaller than the " << src.workspace_bytes
     << " its scores need\", ctx->workspace_bytes);\n"
     << gemm::cublas_handle_prologue(name)
     << "  float* kf_s = reinterpret_cast<float*>(static_cast<char*>(ctx->workspace) + " << ptr_bytes << "ULL);\n";
  if (pointers) {
    os << "  void** kf_p = static_cast<void**>(ctx->workspace);\n"
       << "  " << name << "_ptrs<<<kf_grid(" << Bq << "LL, 256), 256, 0, ctx->stream>>>(" << Q << ", " << K << ", " << V
       << ", " << O << ", kf_s, kf_p);\n"
       << "  KF_LAUNCHED();\n";
  }
  const std::string scale_lit = float_literal(scale);
  os << "  // scale = " << scale_lit << (node.attrs.is_null("scale") ? " (1/sqrt(E))" : "") << "; " << nchunks
     << " chunk(s) of up to " << chunk << " of " << Bq << " batches.\n"
     << "  for (int64_t kf_b0 = 0; kf_b0 < " << Bq << "LL; kf_b0 += " << chunk << "LL) {\n"
     << "    const int64_t kf_cnt = " << Bq << "LL - kf_b0 < " << chunk << "LL ? " << Bq << "LL - kf_b0 : " << chunk
     << "LL;\n";
  // 1. scores
  if (E == 0) {
    os << "    // E = 0: every score is an empty dot product, zero.\n"
       << "    KF_CUDA(cudaMemsetAsync(kf_s, 0, (size_t)(kf_cnt * " << batch_bytes << "LL), ctx->stream));\n";
  } else {
    gemm::RowMajorGemm g;
    g.m = L;
    g.n = S;
    g.k = E;
    g.lda = E;
    g.trans_b = true;
    g.ldb = E;
    g.ldc = S;
    g.alpha = scale_lit;
    g.batch_expr = "kf_cnt";
    if (pointers) {
      g.pointer_arrays = true;
      g.a = "kf_p + kf_b0";
      g.b = "kf_p + " + std::to_string(Bq) + "LL + kf_b0";
      g.c = "kf_p + " + std::to_string(2 * Bq) + "LL + kf_b0";
    } else {
      g.a = Q + " + kf_b0 * " + std::to_string(L * E) + "LL";
      g.b = K + (nk == 1 ? std::string() : " + kf_b0 * " + std::to_string(S * E) + "LL");
      g.c = "kf_s";
      g.stride_a = L * E;
      g.stride_b = nk == 1 ? 0 : S * E;
      g.stride_c = L * S;
    }
    os << "    // S = scale * Q K^T: [" << L << ", " << E << "] x [" << S << ", " << E << "]^T per batch\n"
       << gemm::gemm_call(g, types, "    ");
  }
  // 2. softmax
  os << "    {\n"
     << "      const int64_t kf_rows = kf_cnt * " << L << "LL;\n"
     << "      const unsigned int kf_grid_rows = (unsigned int)(kf_rows < 4224LL ? kf_rows : 4224LL);\n"
     << "      " << name << "_softmax<<<kf_grid_rows, kBlock, 0, ctx->stream>>>(kf_s"
     << (has_mask ? ", " + ctx.in_ptr(3) : "") << ", kf_b0, kf_rows);\n"
     << "      KF_LAUNCHED();\n"
     << "    }\n";
  // 3. P V
  {
    gemm::RowMajorGemm g;
    g.m = L;
    g.n = Ev;
    g.k = S;
    g.lda = S;
    g.ldb = Ev;
    g.ldc = Ev;
    g.batch_expr = "kf_cnt";
    if (pointers) {
      g.pointer_arrays = true;
      g.a = "kf_p + " + std::to_string(2 * Bq) + "LL + kf_b0";
      g.b = "kf_p + " + std::to_string(3 * Bq) + "LL + kf_b0";
      g.c = "kf_p + " + std::to_string(4 * Bq) + "LL + kf_b0";
    } else {
      g.a = "kf_s";
      g.b = V + (nv == 1 ? std::string() : " + kf_b0 * " + std::to_string(S * Ev) + "LL");
      g.c = O + " + kf_b0 * " + std::to_string(L * Ev) + "LL";
      g.stride_a = L * S;
      g.stride_b = nv == 1 ? 0 : S * Ev;
      g.stride_c = L * Ev;
    }
    os << "    // O = P V: [" << L << ", " << S << "] x [" << S << ", " << Ev << "] per batch\n"
       << gemm::gemm_call(g, types, "    ");
  }
  os << "  }\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  src.launches = (pointers ? 1 : 0) + 3 * nchunks;
  return src;
}

}  // namespace kforge::codegen
