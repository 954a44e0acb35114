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
  std::string data;         // cudaDataType of A, B and C: "CUDA_R_32F"
  std::string compute;      // cublasComputeType_t: "CUBLAS_COMPUTE_32F"
  std::string scalar;       // C type of alpha and beta: "float" (double for CUBLAS_COMPUTE_64F)
  std::string ctype;        // C type of the elements: "float", "__half", ...
  bool split_tf32 = false;  // precision 3xtf32 on float32: the operands split for TF32 tensor cores (see below)
};

// fp32 tensors: precision "fp32" is exact fp32 (CUBLAS_COMPUTE_32F with the default math mode,
// as torch runs GEMMs with torch.backends.cuda.matmul.allow_tf32 = False), "tf32" is
// CUBLAS_COMPUTE_32F_FAST_TF32, "3xtf32" splits the operands (kernels/split_tf32.h: fp32-accurate on TF32
// tensor cores) where gemm_call is given scratch, and is exact fp32 elsewhere. fp16 / bf16 accumulate in fp32 like
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
  // Precision 3xtf32: a `char*` expression of split_scratch_bytes(*this, types) bytes for the split
  // operands; left empty, the GEMM runs in exact fp32.
  std::string scratch;
};

// Scratch gemm_call needs in g.scratch to split the operands (precision 3xtf32): 0 where the GEMM is not
// split (another precision, pointer arrays or a batch count known only at run time: those run in exact
// fp32, which is at least as accurate).
int64_t split_scratch_bytes(const RowMajorGemm& g, const GemmTypes& t);

// The statements of the call (wrapped in KF_CUBLAS), indented by `indent`. Under precision 3xtf32 with
// g.scratch set: per chunk of K, two split kernels and one TF32 GEMM over the tripled operands.
std::string gemm_call(const RowMajorGemm& g, const GemmTypes& t, const std::string& indent);

// Precision 3xtf32: points g.scratch at ctx->workspace + offset where the call splits its operands, and
// gives the workspace the kernel then needs (offset + the split's scratch; 0 where it does not split) and
// the statements that check ctx->workspace_bytes against it.
struct SplitScratch {
  size_t workspace_bytes = 0;
  std::string check;
  std::string definition;  // the split kernel (split_kernel_definition), for the source's file scope
};
SplitScratch use_split_scratch(RowMajorGemm& g, const GemmTypes& t, size_t offset, const std::string& kernel_name);

// The file-scope split kernel kf_tf32_split3 (and its rounding), guarded so that a source may hold it twice.
std::string split_kernel_definition();

// Kernel launches and library calls of gemm_call(g, t) (the cost model's count).
int64_t gemm_launches(const RowMajorGemm& g, const GemmTypes& t);

// Bytes rounded up to a multiple of 256 (sub-buffers of ctx->workspace).
inline size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

}  // namespace kforge::codegen::gemm
