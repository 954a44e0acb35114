// Index arithmetic for generated elementwise code: the offset of a broadcast input at an output index.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/strided_view.h"

namespace kforge::codegen {

// C expression of the element offset into a contiguous tensor of shape `in` that broadcasts to
// `out`, at linear output index `i` (an int64_t variable). Same shape: just `i`. In 32-bit arithmetic
// (an unsigned expression) when every index of `out` fits in 31 bits.
std::string broadcast_offset(const ir::Shape& in, const ir::Shape& out, const std::string& i);

// C expression (long long) of the element offset into a view's source at linear output index `i` of `out`,
// the view's shape broadcasting to `out`: the view's offset plus each index times its stride.
std::string strided_offset(const ir::StridedView& view, const ir::Shape& out, const std::string& i);

// C expression of the channel (dim 1) of linear index `i` into a contiguous tensor of shape `out`
// (rank >= 2): a per-channel operand's offset, as batch_norm's.
std::string channel_offset(const ir::Shape& out, const std::string& i);

// The shape of a per-channel operand of `out` (batch_norm's weight, bias and statistics): dim 1 of
// `out` kept, every other dim 1 (as channel_offset indexes it).
ir::Shape channel_shape(const ir::Shape& out);

// Whether the offset of a tensor of shape `in` broadcast to `out` at linear index i depends on
// i / row alone: every dim along which `in` varies has an `out` stride that is a multiple of `row`.
bool row_invariant_offset(const ir::Shape& in, const ir::Shape& out, int64_t row);

// Row-major strides of a contiguous shape.
std::vector<int64_t> contiguous_strides(const ir::Shape& s);

}  // namespace kforge::codegen
