// Gather kernels of the layout and indexing families: one thread per output element in a grid-stride
// loop, the input offset of each computed by index arithmetic with the shapes baked in.
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "codegen/emit.h"

namespace kforge::codegen::layout {

// Product of shape[from, to).
int64_t prod(const ir::Shape& s, size_t from = 0, size_t to = SIZE_MAX);
// A dim attr made non-negative (rank 0 counts as rank 1, as torch does).
int64_t norm_dim(int64_t d, size_t rank);
bool is_half(ir::DType t);

// The index type of a kernel: 32-bit when every offset it forms fits, else 64-bit.
struct Index {
  bool wide = true;
  std::string type() const { return wide ? "int64_t" : "int"; }
  std::string lit(int64_t v) const { return wide ? std::to_string(v) + "LL" : std::to_string(v); }
};

Index index_for(int64_t max_elems);

// The fp16/bf16 headers when the node reads or writes a 16-bit float.
std::string half_headers(const EmitContext& ctx);
// C expression converting `e` of dtype `from` to dtype `to` the way torch's .to() does.
std::string convert(const std::string& e, ir::DType from, ir::DType to);
// A zero of the dtype, as a C expression.
std::string zero_of(ir::DType t);

// A pad's dims (torch's `pad` list: last dim first, a before/after pair each) with runs of unpadded dims merged
// into one: the output and input extents, the pad before each merged dim (negative: cropped), whether it is
// padded. The constant and the reflect/replicate/circular pad kernels index the same merged dims.
struct MergedPadDims {
  ir::Shape out, in;
  std::vector<int64_t> before;
  std::vector<bool> padded;
  bool any_padded() const;
};
MergedPadDims merge_pad_dims(const ir::Shape& in, const ir::Shape& out, const std::vector<int64_t>& pad);

// A kernel that does nothing (an empty output).

KernelSource empty_kernel(const EmitContext& ctx);
// out[0 .. bytes) = in[offset elements ..] as one device-to-device copy on the stream.
KernelSource memcpy_kernel(const EmitContext& ctx, size_t in_index, int64_t elem_offset, int64_t elems);
// A grid-stride gather kernel over the n output elements: `body` assigns out[i] from the kernel
// parameters in0.. (the node's inputs, typed), with `i` the output index of type Index.
KernelSource gather_kernel(const EmitContext& ctx, const Index& ix, const std::string& body,
                           const std::string& comment);
// Coordinate `k` of linear index `i` over `shape` (row-major): "((i / stride) % size)" with the
// trivial parts left out.
std::string coord(const Index& ix, const ir::Shape& shape, size_t k, const std::string& i);

}  // namespace kforge::codegen::layout

namespace kforge::codegen {

// Ops of the Index, Pad and Resample families with emitters in files of their own (emit_Index, emit_Pad
// and emit_Resample dispatch to them): reflect, replicate and circular pads (emit_pad_modes.cpp),
// embedding_bag (emit_embedding_bag.cpp), grid_sample (emit_grid_sample.cpp).
StatusOr<KernelSource> emit_mode_pad(const EmitContext& ctx);
StatusOr<KernelSource> emit_embedding_bag(const EmitContext& ctx);
StatusOr<KernelSource> emit_grid_sample(const EmitContext& ctx);

}  // namespace kforge::codegen
