// 3xTF32 GEMMs (precision "3xtf32" on float32 cuBLAS GEMMs): fp32-accurate products on TF32 tensor cores.
// Each operand x is split x = hi + lo, hi = x rounded to TF32 (10 mantissa bits), lo = x - hi (exact in
// fp32). One TF32 GEMM over the operands tripled along K, [lo | hi | hi] x [hi ; lo ; hi], computes
// lo*hi + hi*lo + hi*hi with fp32 accumulation (the small terms first); hi*hi is exact on the tensor
// cores (11 x 11 significant bits fit fp32's 24), lo loses at most 2^-10 of itself to TF32.
// Error bound per product a*b, against exact arithmetic (u = 2^-11, TF32's unit roundoff):
//   |a*b - (lo_a*hi_b + hi_a*lo_b + hi_a*hi_b)| <= (2^-20 + 2^-22)(1 + u) |a||b|  ~= 1.2e-6 |a||b|
// (lo*lo, below u^2 |a||b|, is dropped; each lo rounds to TF32 within 2u |lo| <= 2u^2 |x|). The sum over K
// then rounds in fp32 like any fp32 GEMM. Against torch's fp32 GEMM this is 1.2e-6 of sum |a||b| plus the
// two accumulation orders' difference: inside kernelbench's 1e-4 (tests/unit/split_tf32_test.cpp checks
// the bound on emulated TF32 rounding; tests/gpu/test_split_tf32_gemm.py on the device).
// Non-finite operands: an inf keeps lo = 0, so where fp32 gives a * inf = inf, the split can give NaN (its
// 0 * inf in lo_a * hi_b when a is exactly a TF32 value); NaN stays NaN. The harness's random inputs have
// none; data with infs should keep precision fp32 (`kforge plan --precision fp32`).
// The emitter (codegen/gemm_emit), the skill that picks the precision (skills/precision) and the cost
// model (costmodel/roofline) read the same sizes from here.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::kernels {

// Scratch for the split operands of one chunk of K (the copies of A and B, tripled along K); a GEMM
// whose copies would not fit runs over chunks of K, accumulating (beta = 1 after the first).
inline constexpr int64_t kSplitTf32ScratchBytes = int64_t{1} << 30;

// The longest K one TF32 GEMM accumulates: the tensor cores add each k-step's products into the fp32
// accumulator without rounding to nearest, which biases a long sum of same-signed products toward zero
// (measured on the H100 at 25b1fdc: 1.4e-5 relative at K = 2048, 1.9e-4 at K = 32768 in one chain, against
// kernelbench's 1e-4). Longer contractions run as chunks of at most this much K, the chunks' results added
// by cuBLAS's epilogue (beta = 1) in fp32 rounded to nearest, so the bias stays that of one chunk.
inline constexpr int64_t kSplitTf32MaxChainK = 2048;
// That bias per unit of K in one chain, relative to the sum (the 1.4e-5 measured at 2048). It is systematic
// (every same-signed sum shrinks alike), not noise: skills/precision.cpp lets one chain's take at most a
// quarter of the tolerance. On sums that cross zero it scatters; there the error estimate's accumulation-order
// term (skills/tf32_error.h) refuses the split under 1e-4 already.
inline constexpr double kSplitTf32ChainBiasPerK = 1.4e-5 / 2048;

// The copies' K extent and the other dims are padded to this many floats (64 bytes), zeros in the K padding:
// cuBLAS's tensor-core kernels want 16-byte-aligned rows (an odd K or N, as 2949 or 5921, otherwise sends
// it to slower ones).
inline constexpr int64_t kSplitTf32Pad = 16;
inline int64_t split_tf32_padded(int64_t n) {
  return (n + kSplitTf32Pad - 1) / kSplitTf32Pad * kSplitTf32Pad;
}

// Bytes the split adds to a GEMM whose operands hold `operand_bytes`: the split reads them once and
// writes three copies, and the GEMM reads the three copies instead of one; each chunk after the first
// reads and writes the output once more (beta = 1).
inline constexpr double kSplitTf32TrafficPerOperandByte = 6.0;

// The split pays where the GEMM has at least this many FLOPs per byte the split adds (the fp32 rate
// against a third of the TF32 one, ~60 % of the peaks reached by cuBLAS, and the bandwidth of an
// H100/H200: break-even near 40) and at least kSplitTf32MinFlops (two extra launches of a few us).
inline constexpr double kSplitTf32MinFlopsPerByte = 48.0;
inline constexpr double kSplitTf32MinFlops = 1e9;

struct SplitTf32Chunks {
  int64_t k_chunk = 0;  // K per chunk (the last may be shorter), at most kSplitTf32MaxChainK
  int64_t chunks = 0;
  int64_t scratch_bytes = 0;  // for one chunk: 3 * padded k_chunk * (a_rows + b_cols) floats
};

// The chunks of K for a GEMM whose split copies hold a_rows rows of A and b_cols columns of B per unit of K
// (M and N, padded where they are the copies' rows, times the operand's stored batches); chunks of a
// multiple of 64 where the scratch cuts them. chunks == 0 when not even 64 of K fit the scratch.
inline SplitTf32Chunks split_tf32_chunks(int64_t a_rows, int64_t b_cols, int64_t k) {
  SplitTf32Chunks c;
  const int64_t per_k = 3 * 4 * (a_rows + b_cols);  // bytes of scratch per unit of K
  if (per_k <= 0 || k <= 0) return c;
  int64_t fit = std::min(kSplitTf32ScratchBytes / per_k, kSplitTf32MaxChainK);
  if (fit < k) fit = fit / 64 * 64;
  if (fit <= 0) return c;
  c.k_chunk = std::min(fit, k);
  c.chunks = (k + c.k_chunk - 1) / c.k_chunk;
  c.scratch_bytes = per_k * split_tf32_padded(c.k_chunk);
  return c;
}

// The chunks of a row-major GEMM C[M, N] = op(A) op(B) over K as codegen/gemm_emit.cpp lays out its copies: A's
// rows are M (padded when A is transposed: K along its rows), B's N (padded when B is not transposed), times
// the batches each operand stores.
inline int64_t split_tf32_copy_m(int64_t m, bool trans_a) {
  return trans_a ? split_tf32_padded(m) : m;
}
inline int64_t split_tf32_copy_n(int64_t n, bool trans_b) {
  return trans_b ? n : split_tf32_padded(n);
}
inline SplitTf32Chunks split_tf32_gemm_chunks(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b,
                                              int64_t batches_a, int64_t batches_b) {
  return split_tf32_chunks(batches_a * split_tf32_copy_m(m, trans_a), batches_b * split_tf32_copy_n(n, trans_b), k);
}

// A float32 GEMM node (linear, matmul, einsum as one GEMM) as the split sees it: its work, its bytes and
// the chunks of K its copies take (the sizes codegen/gemm_emit.cpp uses). ok is false for any other node
// and for a matmul whose batches broadcast through per-batch pointers (not split: exact fp32).
struct SplitTf32Gemm {
  bool ok = false;
  double flops = 0, operand_bytes = 0, output_bytes = 0;
  int64_t k = 0;
  // The output's rows (N floats, C's leading dimension) a multiple of 4: 16-byte aligned. C is the caller's
  // tensor and cannot be padded; level1/8 (N = 5921) ran 0.84x of compile unpadded and 0.93x with only the
  // copies padded (H100, 25b1fdc and 7a8f0fb), where exact fp32 ran at compile's time: left fp32.
  bool output_aligned = false;
  SplitTf32Chunks chunks;
  // Bytes the split adds: the copies (kSplitTf32TrafficPerOperandByte) and a read and write of the output
  // per chunk after the first.
  double added_bytes() const {
    return kSplitTf32TrafficPerOperandByte * operand_bytes +
           2.0 * static_cast<double>(chunks.chunks - 1) * output_bytes;
  }
};
// The GEMM of node n. Given the kernel whose root matmul n is, the matmul as codegen batches it
// (kernels::gemm_batch_plan: through the kernel's permutes; not ok where it needs per-batch pointers, exact fp32).
SplitTf32Gemm split_tf32_gemm_of(const ir::Graph& g, const ir::Node& n, const schedule::Kernel* k = nullptr);

}  // namespace kforge::kernels
