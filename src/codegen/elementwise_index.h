// Index arithmetic for generated elementwise code: the offset of a broadcast input at an output index.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kforge::codegen {

// C expression of the element offset into a contiguous tensor of shape `in` that broadcasts to
// `out`, at linear output index `i` (an int64_t variable). Same shape: just `i`. In 32-bit arithmetic
// (an unsigned expression) when every index of `out` fits in 31 bits.
std::string broadcast_offset(const ir::Shape& in, const ir::Shape& out, const std::string& i);

// C expression of the channel (dim 1) of linear index `i` into a contiguous tensor of shape `out`
// (rank >= 2): a per-channel operand's offset, as batch_norm's.
std::string channel_offset(const ir::Shape& out, const std::string& i);

// Row-major strides of a contiguous shape.
std::vector<int64_t> contiguous_strides(const ir::Shape& s);

}  // namespace kforge::codegen
