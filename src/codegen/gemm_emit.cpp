// Shared pieces of the cuBLAS-based emitters: types per dtype and precision, row-major GEMM calls.
#include "codegen/gemm_emit.h"

#include <sstream>

namespace kforge::codegen::gemm {

StatusOr<GemmTypes> gemm_types(ir::DType t, const std::string& precision, const std::string& what) {
  switch (t) {
    case ir::DType::kFloat32:
      if (precision == "fp32") return GemmTypes{"CUDA_R_32F", "CUBLAS_COMPUTE_32F", "float", "float"};
      if (precision == "tf32") return GemmTypes{"CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32", "float", "float"};
      if (precision == "3xtf32") {
        return unsupported(
            what + ": precision 3xtf32 is not implemented for cuBLAS GEMMs yet; use precision fp32 (exact) or tf32");
      }
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
