// Shared pieces of the cuBLAS-based emitters (matmul, linear, attention): element and compute types
// per dtype and precision, the status macro, the handle prologue and row-major GEMM calls.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "codegen/emit.h"

namespace kforge::codegen::gemm {

// cuBLAS types of a GEMM on tensors of one dtype.
struct GemmTypes {
  std::string data;     // cudaDataType of A, B and C: "CUDA_R_32F"
  std::string compute;  // cublasComputeType_t: "CUBLAS_COMPUTE_32F"
  std::string scalar;   // C type of alpha and beta: "float" (double for CUBLAS_COMPUTE_64F)
  std::string ctype;    // C type of the elements: "float", "__half", ...
};

// fp32 tensors: precision "fp32" is exact fp32 (CUBLAS_COMPUTE_32F with the default math mode,
// as torch runs GEMMs with torch.backends.cuda.matmul.allow_tf32 = False), "tf32" is
// CUBLAS_COMPUTE_32F_FAST_TF32, "3xtf32" is not written yet. fp16 / bf16 accumulate in fp32 like
// torch; fp64 in fp64. Integer and bool GEMMs are refused (torch has no CUDA kernel for them).
StatusOr<GemmTypes> gemm_types(ir::DType t, const std::string& precision, const std::string& what);

// `#include <cublas_v2.h>` (and the fp16 headers), plus KF_CUBLAS(call): returns kf_fail with
// cublasGetStatusString on a failed status.
std::string cublas_headers();

// Statements that declare `cublasHandle_t kf_h` bound to ctx->stream (null checked), with host
// pointer mode and the default math mode (no TF32 unless a call's compute type asks for it).
std::string cublas_handle_prologue(const std::string& kernel_name);

// One row-major GEMM (or a batch of them): C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
// A is stored [M,K] (or [K,M] when trans_a) with row stride lda; likewise B [K,N] (or [N,K]) and C
// [M,N] with ldc. cuBLAS is column-major, so the call computes C^T = op(B)^T op(A)^T.
struct RowMajorGemm {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string a, b, c;  // device pointer expressions (or pointer-array expressions, see below)
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::string alpha = "1", beta = "0";               // C expressions of the scalar type
  int64_t batch = 1;                                 // > 1: strided batched (or pointer arrays)
  std::string batch_expr;                            // when set, the batch count as a C expression instead
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch entries
  bool pointer_arrays = false;                       // a, b, c name device arrays of per-batch pointers (GemmBatchedEx)
};

// The statements of the call (wrapped in KF_CUBLAS), indented by `indent`.
std::string gemm_call(const RowMajorGemm& g, const GemmTypes& t, const std::string& indent);

// Bytes rounded up to a multiple of 256 (sub-buffers of ctx->workspace).
inline size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

}  // namespace kforge::codegen::gemm
