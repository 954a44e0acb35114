// Shape arithmetic shared by shape inference and the code generators (broadcasting, windows, einsum).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace kforge::ir {

// numpy/torch broadcasting of two shapes.
StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Window parameters of a conv or pool, per spatial dim: kernel, stride and dilation at least 1,
// padding (and output_padding) at least 0, all below 2^31, so that the size arithmetic is exact.
// `output_padding` may be empty (not a transposed conv).
Status check_window_params(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& pad, const std::vector<int64_t>& dilation,
                           const std::vector<int64_t>& output_padding = {});

// Output length of a sliding window (conv, pooling); parameters as check_window_params accepts.
int64_t window_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode);

// Output length of a transposed convolution.
int64_t conv_transpose_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                                int64_t output_padding);

// Reduced dims of a reduction: attr dims, empty = all; sorted, unique, in range.
StatusOr<std::vector<int64_t>> reduction_dims(const std::vector<int64_t>& dims, size_t rank);

// An einsum equation split into operand subscripts and output subscripts (explicit or implicit).
struct EinsumSpec {
  std::vector<std::string> operands;
  std::string output;
};
StatusOr<EinsumSpec> parse_einsum(const std::string& equation, size_t num_operands);

// An einsum of two operands that is one row-major (strided batched) GEMM on the operands as they are
// stored: every letter is batch (in a, b and the output), M (a and output), N (b and output) or K (a
// and b, summed); no letter repeats within a term, sizes agree (no size-1 broadcast); the output is
// [batch..., M..., N...]; a is [batch..., M..., K...] or [batch..., K..., M...] (trans_a), b is
// [batch..., K..., N...] or [batch..., N..., K...] (trans_b), each group in one order everywhere.
// Example: "bijl,lk->bijk" (level1/11) is one GEMM of M = b*i*j, K = l, N = k.
struct EinsumGemm {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
};
StatusOr<EinsumGemm> einsum_as_gemm(const std::string& equation, const Shape& a, const Shape& b, const Shape& out);

// torch.matmul's result shape, including 1-D operands and broadcast batch dims.
StatusOr<Shape> matmul_shape(const Shape& a, const Shape& b);

}  // namespace kforge::ir
