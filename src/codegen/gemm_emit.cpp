// Shared pieces of the cuBLAS-based emitters: types per dtype and precision, row-major GEMM calls.
#include "codegen/gemm_emit.h"

#include <sstream>

#include "kernels/split_tf32.h"

namespace kforge::codegen::gemm {

StatusOr<GemmTypes> gemm_types(ir::DType t, const std::string& precision, const std::string& what) {
  switch (t) {
    case ir::DType::kFloat32:
      if (precision == "fp32") return GemmTypes{"CUDA_R_32F", "CUBLAS_COMPUTE_32F", "float", "float"};
      if (precision == "tf32") return GemmTypes{"CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32", "float", "float"};
      // 3xtf32: exact fp32 compute where a call is not split (gemm_call), TF32 on the split operands.
      if (precision == "3xtf32") return GemmTypes{"CUDA_R_32F", "CUBLAS_COMPUTE_32F", "float", "float", true};
      return invalid_argument(what + ": unknown precision '" + precision + "' (fp32, tf32 or 3xtf32)");
    case ir::DType::kFloat16: return GemmTypes{"CUDA_R_16F", "CUBLAS_COMPUTE_32F", "float", "__half"};
    case ir::DType::kBFloat16: return GemmTypes{"CUDA_R_16BF", "CUBLAS_COMPUTE_32F", "float", "__nv_bfloat16"};
    case ir::DType::kFloat64: return GemmTypes{"CUDA_R_64F", "CUBLAS_COMPUTE_64F", "double", "double"};
    default: break;
  }
  return unsupported(what + " on " + std::string(ir::dtype_name(t)) +
                     " tensors: torch has no CUDA GEMM for integer or bool tensors, and neither has kforge");
}

std::string cublas_headers() {
  return "#include <cublas_v2.h>\n"
         "#include <cuda_fp16.h>\n"
         "#include <cuda_bf16.h>\n\n"
         "#ifndef KF_CUBLAS\n"
         "#define KF_CUBLAS(call)                                                                           \\\n"
         "  do {                                                                                            \\\n"
         "    cublasStatus_t kf_s_ = (call);                                                                \\\n"
         "    if (kf_s_ != CUBLAS_STATUS_SUCCESS)                                                           \\\n"
         "      return kf_fail(1, \"%s:%d: %s failed: %s\", __FILE__, __LINE__, #call, cublasGetStatusString(kf_s_)); "
         "\\\n"
         "  } while (0)\n"
         "#endif\n";
}

std::string cublas_handle_prologue(const std::string& kernel_name) {
  return "  cublasHandle_t kf_h = static_cast<cublasHandle_t>(kf_cublas_handle(ctx));\n"
         "  if (kf_h == nullptr) return kf_fail(1, \"" +
         kernel_name +
         ": no cuBLAS handle for device %d\", ctx->device);\n"
         "  KF_CUBLAS(cublasSetPointerMode(kf_h, CUBLAS_POINTER_MODE_HOST));\n"
         "  // Default math: no TF32 unless the compute type of a call asks for it (CUBLAS_COMPUTE_32F_FAST_TF32).\n"
         "  KF_CUBLAS(cublasSetMathMode(kf_h, CUBLAS_DEFAULT_MATH));\n";
}

// Defined where a call splits (use_split_scratch), so that a program of library calls alone keeps no
// __global__ kernel it does not run.
std::string split_kernel_definition() {
  return "#ifndef KF_TF32_SPLIT3\n"
         "#define KF_TF32_SPLIT3\n"
         "// 3xTF32 (kernels/split_tf32.h): x = hi + lo, hi = x rounded to TF32 (to nearest even at bit 13), lo = x - "
         "hi\n"
         "// (exact in fp32). Non-finite x keeps x as hi and 0 as lo; a finite x that would round up to inf is cut.\n"
         "__device__ __forceinline__ float2 kf_tf32_split(float x) {\n"
         "  if (!isfinite(x)) return make_float2(x, 0.0f);\n"
         "  const unsigned u = __float_as_uint(x);\n"
         "  float hi = __uint_as_float((u + 0x0FFFu + ((u >> 13) & 1u)) & 0xFFFFE000u);\n"
         "  if (!isfinite(hi)) hi = __uint_as_float(u & 0xFFFFE000u);\n"
         "  return make_float2(hi, x - hi);\n"
         "}\n"
         "// One operand's chunk of kc along K (source: batch stride bs, row stride ld; K along its rows when "
         "k_is_rows,\n"
         "// else along its columns, `other` the other extent) written as three copies along K, each kp >= kc long\n"
         "// (zeros past kc): lo in copy lo_slot, hi in the others. The copies: [batch][3][kp][ldo] when k_is_rows,\n"
         "// else [batch][other][3 * kp].\n"
         "__global__ void __launch_bounds__(256) kf_tf32_split3(const float* __restrict__ src, float* __restrict__ "
         "dst,\n"
         "    long long batch, long long kc, long long kp, long long other, long long ld, long long bs, long long "
         "ldo,\n"
         "    int k_is_rows, int lo_slot) {\n"
         "  KF_GRID_STRIDE(i, batch * kp * other) {\n"
         "    long long k, o, b;\n"
         "    if (k_is_rows) { o = i % other; k = (i / other) % kp; b = i / (other * kp); }\n"
         "    else { k = i % kp; o = (i / kp) % other; b = i / (kp * other); }\n"
         "    const float2 s = k < kc ? kf_tf32_split(src[b * bs + (k_is_rows ? k * ld + o : o * ld + k)])\n"
         "                            : make_float2(0.0f, 0.0f);\n"
         "    for (int j = 0; j < 3; ++j) {\n"
         "      const long long d = k_is_rows ? ((b * 3 + j) * kp + k) * ldo + o : (b * other + o) * 3 * kp + j * kp + "
         "k;\n"
         "      dst[d] = j == lo_slot ? s.y : s.x;\n"
         "    }\n"
         "  }\n"
         "}\n"
         "#endif\n";
}

namespace {

// Whether the call splits its operands, and in how many chunks of K (precision 3xtf32, scratch given).
bool splits(const RowMajorGemm& g, const GemmTypes& t) {
  return t.split_tf32 && !g.pointer_arrays && g.batch_expr.empty() && g.k > 0;
}

// The copies' row lengths: M (padded when A is transposed: K along its rows), N (padded when B is not).
int64_t copy_m(const RowMajorGemm& g) {
  return kernels::split_tf32_copy_m(g.m, g.trans_a);
}
int64_t copy_n(const RowMajorGemm& g) {
  return kernels::split_tf32_copy_n(g.n, g.trans_b);
}

kernels::SplitTf32Chunks chunks_of(const RowMajorGemm& g) {
  const int64_t batches_a = g.batch > 1 && g.stride_a != 0 ? g.batch : 1;
  const int64_t batches_b = g.batch > 1 && g.stride_b != 0 ? g.batch : 1;
  return kernels::split_tf32_gemm_chunks(g.m, g.n, g.k, g.trans_a, g.trans_b, batches_a, batches_b);
}

// The split GEMM: per chunk of K (at most kSplitTf32MaxChainK), A's and B's chunks split into scratch
// ([lo | hi | hi] and [hi ; lo ; hi] along K, each copy padded with zeros to a multiple of kSplitTf32Pad),
// then one TF32 GEMM over the three copies, accumulating onto C after the first chunk.
std::string split_gemm_call(const RowMajorGemm& g, const std::string& indent) {
  const kernels::SplitTf32Chunks ch = chunks_of(g);
  const int64_t batches_a = g.batch > 1 && g.stride_a != 0 ? g.batch : 1;
  const int64_t batches_b = g.batch > 1 && g.stride_b != 0 ? g.batch : 1;
  const std::string M = std::to_string(g.m) + "LL", N = std::to_string(g.n) + "LL";
  const std::string in = indent + "    ";
  const int64_t pad = kernels::kSplitTf32Pad;
  std::ostringstream os;
  os << indent << "  // precision 3xtf32: fp32-accurate on TF32 tensor cores (kernels/split_tf32.h), K = " << g.k
     << " in " << ch.chunks << " chunk" << (ch.chunks > 1 ? "s" : "") << " of " << ch.k_chunk << ".\n"
     << indent << "  const float kf_one = 1.0f;\n"
     << indent << "  float* kf_sa = reinterpret_cast<float*>(" << g.scratch << ");\n"
     << indent << "  float* kf_sb = kf_sa + " << 3 * kernels::split_tf32_padded(ch.k_chunk) * copy_m(g) * batches_a
     << "LL;\n"
     << indent << "  for (long long kf_k0 = 0; kf_k0 < " << g.k << "LL; kf_k0 += " << ch.k_chunk << "LL) {\n"
     << in << "const long long kf_kc = " << g.k << "LL - kf_k0 < " << ch.k_chunk << "LL ? " << g.k
     << "LL - kf_k0 : " << ch.k_chunk << "LL;\n"
     << in << "const long long kf_kp = (kf_kc + " << pad - 1 << "LL) / " << pad << "LL * " << pad << "LL;\n";
  // A stored [M, K] (K along the columns) or, transposed, [K, M]; B stored [K, N] or, transposed, [N, K].
  auto split = [&](const std::string& src, bool k_is_rows, const std::string& other, int64_t ld, int64_t stride,
                   int64_t batches, int64_t copy_row, const std::string& dst, int lo_slot) {
    const std::string offset = k_is_rows ? "kf_k0 * " + std::to_string(ld) + "LL" : "kf_k0";
    os << in << "kf_tf32_split3<<<kf_grid(" << batches << "LL * kf_kp * " << other
       << ", 256), 256, 0, ctx->stream>>>(\n"
       << in << "    " << src << " + " << offset << ", " << dst << ", " << batches << "LL, kf_kc, kf_kp, " << other
       << ", " << ld << "LL, " << stride << "LL, "
       << (k_is_rows ? std::to_string(copy_row) + "LL" : std::string("3 * kf_kp")) << ", " << (k_is_rows ? 1 : 0)
       << ", " << lo_slot << ");\n"
       << in << "KF_LAUNCHED();\n";
  };
  split(g.a, g.trans_a, M, g.lda, g.stride_a, batches_a, copy_m(g), "kf_sa", 0);
  split(g.b, !g.trans_b, N, g.ldb, g.stride_b, batches_b, copy_n(g), "kf_sb", 1);
  const std::string op_first = g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N";
  const std::string op_second = g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N";
  const std::string lda = g.trans_a ? std::to_string(copy_m(g)) + "LL" : "3 * kf_kp";
  const std::string ldb = g.trans_b ? "3 * kf_kp" : std::to_string(copy_n(g)) + "LL";
  const std::string stride_a = batches_a > 1 ? "3 * kf_kp * " + std::to_string(copy_m(g)) + "LL" : "0LL";
  const std::string stride_b = batches_b > 1 ? "3 * kf_kp * " + std::to_string(copy_n(g)) + "LL" : "0LL";
  os << in << "KF_CUBLAS(cublasGemmStridedBatchedEx_64(kf_h, " << op_first << ", " << op_second << ", " << N << ", "
     << M << ", 3 * kf_kp, &kf_alpha,\n"
     << in << "    kf_sb, CUDA_R_32F, " << ldb << ", " << stride_b << ",\n"
     << in << "    kf_sa, CUDA_R_32F, " << lda << ", " << stride_a << ", kf_k0 == 0 ? &kf_beta : &kf_one,\n"
     << in << "    " << g.c << ", CUDA_R_32F, " << g.ldc << "LL, " << g.stride_c << "LL, " << g.batch
     << "LL, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));\n"
     << indent << "  }\n";
  return os.str();
}

}  // namespace

int64_t split_scratch_bytes(const RowMajorGemm& g, const GemmTypes& t) {
  return splits(g, t) ? chunks_of(g).scratch_bytes : 0;
}

SplitScratch use_split_scratch(RowMajorGemm& g, const GemmTypes& t, size_t offset, const std::string& kernel_name) {
  const int64_t bytes = split_scratch_bytes(g, t);
  if (bytes <= 0) return {};
  SplitScratch s;
  s.workspace_bytes = offset + static_cast<size_t>(bytes);
  s.definition = split_kernel_definition();
  g.scratch = "(static_cast<char*>(ctx->workspace) + " + std::to_string(offset) + "ULL)";
  s.check = "  if (ctx->workspace_bytes < " + std::to_string(s.workspace_bytes) + "ULL) return kf_fail(2, \"" +
            kernel_name + ": workspace of %zu bytes is smaller than the " + std::to_string(s.workspace_bytes) +
            " its 3xtf32 operand copies need\", ctx->workspace_bytes);\n";
  return s;
}

int64_t gemm_launches(const RowMajorGemm& g, const GemmTypes& t) {
  if (!splits(g, t) || g.scratch.empty()) return 1;
  const auto ch = chunks_of(g);
  return ch.chunks > 0 ? 3 * ch.chunks : 1;
}

std::string gemm_call(const RowMajorGemm& g, const GemmTypes& t, const std::string& indent) {
  // Column-major view: C^T[N,M] = op(B)^T[N,K] * op(A)^T[K,M]; a row-major matrix stored [R,C] with
  // row stride ld is the column-major [C,R] matrix with leading dimension ld.
  const std::string op_first = g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N";
  const std::string op_second = g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N";
  const std::string count = g.batch_expr.empty() ? std::to_string(g.batch) + "LL" : "(int64_t)(" + g.batch_expr + ")";
  std::ostringstream os;
  os << indent << "{\n"
     << indent << "  const " << t.scalar << " kf_alpha = (" << t.scalar << ")(" << g.alpha << ");\n"
     << indent << "  const " << t.scalar << " kf_beta = (" << t.scalar << ")(" << g.beta << ");\n";
  if (splits(g, t) && !g.scratch.empty() && chunks_of(g).chunks > 0) {
    os << split_gemm_call(g, indent) << indent << "}\n";
    return os.str();
  }
  if (t.split_tf32) {
    os << indent << "  // precision 3xtf32, not split here ("
       << (g.pointer_arrays || !g.batch_expr.empty() ? "per-batch pointers or a run-time batch count"
                                                     : "no scratch for the split operands")
       << "): exact fp32, at least as accurate.\n";
  }
  const std::string dims = std::to_string(g.n) + "LL, " + std::to_string(g.m) + "LL, " + std::to_string(g.k) + "LL";
  const bool single = g.batch_expr.empty() && g.batch == 1 && !g.pointer_arrays;
  if (single) {
    os << indent << "  KF_CUBLAS(cublasGemmEx_64(kf_h, " << op_first << ", " << op_second << ", " << dims
       << ", &kf_alpha,\n"
       << indent << "      " << g.b << ", " << t.data << ", " << g.ldb << "LL,\n"
       << indent << "      " << g.a << ", " << t.data << ", " << g.lda << "LL, &kf_beta,\n"
       << indent << "      " << g.c << ", " << t.data << ", " << g.ldc << "LL, " << t.compute
       << ", CUBLAS_GEMM_DEFAULT));\n";
  } else if (g.pointer_arrays) {
    os << indent << "  KF_CUBLAS(cublasGemmBatchedEx_64(kf_h, " << op_first << ", " << op_second << ", " << dims
       << ", &kf_alpha,\n"
       << indent << "      (const void* const*)(" << g.b << "), " << t.data << ", " << g.ldb << "LL,\n"
       << indent << "      (const void* const*)(" << g.a << "), " << t.data << ", " << g.lda << "LL, &kf_beta,\n"
       << indent << "      (void* const*)(" << g.c << "), " << t.data << ", " << g.ldc << "LL, " << count << ", "
       << t.compute << ", CUBLAS_GEMM_DEFAULT));\n";
  } else {
    os << indent << "  KF_CUBLAS(cublasGemmStridedBatchedEx_64(kf_h, " << op_first << ", " << op_second << ", " << dims
       << ", &kf_alpha,\n"
       << indent << "      " << g.b << ", " << t.data << ", " << g.ldb << "LL, " << g.stride_b << "LL,\n"
       << indent << "      " << g.a << ", " << t.data << ", " << g.lda << "LL, " << g.stride_a << "LL, &kf_beta,\n"
       << indent << "      " << g.c << ", " << t.data << ", " << g.ldc << "LL, " << g.stride_c << "LL, " << count
       << ", " << t.compute << ", CUBLAS_GEMM_DEFAULT));\n";
  }
  os << indent << "}\n";
  return os.str();
}

}  // namespace kforge::codegen::gemm
