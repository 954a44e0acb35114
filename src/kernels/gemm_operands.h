// The operands of a cuBLAS matmul kernel as strided views of stored tensors: a permute of a matmul
// operand (x.transpose(-2, -1), a head split's permute(0, 2, 1, 3), ...) need not be copied when the
// GEMM can read the permuted tensor in place, through its leading dimension, its transpose flag and
// per-batch offsets. This file says when it can (the form gemm_permuted_operands, kernels/forms.def:
// the skill gemm_permuted_operands forms it, codegen's emit_Matmul builds it) and gives the strides.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::kernels {

// One matmul operand: the logical tensor (the matmul's input type) read from `source`, a stored
// row-major contiguous tensor, with `strides` elements per step of each logical dim.
struct StridedOperand {
  ir::ValueIndex source = ir::kNoValue;
  ir::Shape shape;               // the operand's logical shape
  std::vector<int64_t> strides;  // per logical dim, over source
  int permutes = 0;              // permute nodes of the kernel read through
};

// How a GEMM reads the matrix (last two dims [R, C]) of an operand of rank >= 2: row-major with row
// stride ld (C at stride 1), or transposed (R at stride 1, column stride ld). ok is false when neither
// dim is at stride 1 or ld would be smaller than cuBLAS accepts.
struct MatrixLayout {
  bool ok = false;
  bool transposed = false;
  int64_t ld = 0;
};

// Operand i (0 or 1) of the kernel's root matmul, read through the permute nodes of `k` that make it
// (each permute's result read by the next one, or by the matmul, within k); the plain stored input
// where no permute of k makes it.
StridedOperand gemm_operand(const ir::Graph& g, const schedule::Kernel& k, size_t i);

// The layout of the operand's last two dims (rank >= 2).
MatrixLayout matrix_layout(const StridedOperand& op);

// Whether the operand's batch dims, broadcast to `batch` (the GEMM's batch shape), are one stride:
// offset(b) = b * stride for the flat batch index b (stride 0 for an operand without batch). Sets
// *stride when they are.
bool uniform_batch_stride(const StridedOperand& op, const ir::Shape& batch, int64_t* stride);

// A 1-D operand as the matrix torch.matmul makes of it: a row [1, K] (operand a) or a column [K, 1] (b).
StridedOperand as_matrix(StridedOperand op, bool is_a);

// How codegen (emit_Matmul) batches the kernel's matmul, on its operands as stored, cheapest first:
//   kOneGemm   b has no batch and a's batch dims and M are one run of rows lda apart: one GEMM of m = batches x M;
//   kStrided   each operand's batch is one stride (0 where it has none): one strided-batched GEMM;
//   kPointers  any other batch (a broadcast [B, 1] against [1, H], a permuted batch of two strides): per-batch
//              pointer arrays (cublasGemmBatchedEx), which precision 3xtf32 runs in exact fp32.
struct GemmBatchPlan {
  enum class Kind { kOneGemm, kStrided, kPointers };
  bool ok = false;  // false: an operand of rank 0, a layout no GEMM reads, or batch dims that do not broadcast
  Kind kind = Kind::kStrided;
  StridedOperand a, b;  // as matrices (as_matrix)
  MatrixLayout la, lb;
  ir::Shape batch;                     // the broadcast batch shape of the result
  int64_t m = 0, n = 0, k = 0;         // of one GEMM (kOneGemm: m counts a's batch rows)
  int64_t batches = 1;                 // GEMMs (1 for kOneGemm)
  int64_t stride_a = 0, stride_b = 0;  // kStrided: elements between batch entries
};
GemmBatchPlan gemm_batch_plan(const ir::Graph& g, const schedule::Kernel& k);

// The form gemm_permuted_operands: a cuBLAS kernel whose root is a matmul and whose other nodes are
// permutes, each read only inside the kernel, that make its operands; each folded operand has rank >= 2
// and a matrix layout a GEMM reads (matrix_layout(...).ok). Kernels of this form but for the permutes
// (one-op matmuls) are not of it.
bool is_gemm_permuted_operands(const ir::Graph& g, const schedule::Kernel& k);

}  // namespace kforge::kernels
