// Strided views: the layout ops whose output is its input read at other positions (permute, expand, slice,
// select, unfold, flip, and a reshape that torch could make a view) described as sizes, element strides and an
// offset over the input's contiguous buffer. A kernel that reads through a view reads the input in place
// instead of a gathered copy (codegen: the elementwise and reduction readers).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kforge::ir {

struct StridedView {
  ValueIndex source = kNoValue;  // the contiguous tensor read
  Shape shape;                   // the view's sizes
  std::vector<int64_t> strides;  // element strides into source, one per dim (0: broadcast, negative: flipped)
  int64_t offset = 0;            // element offset of the view's first element in source
};

// Ops whose output can be a strided view of their only tensor input (reshape only when its sizes allow).
bool is_view_op(OpId op);

// The contiguous view of all of `v`.
StridedView whole_view(const Graph& g, ValueIndex v);

// The view made by `node` (a view op) reading `in`: nullopt when the node is not a view op, or is a
// reshape whose sizes cannot be expressed by strides over `in` (torch would copy).
std::optional<StridedView> apply_view(const Graph& g, const Node& node, const StridedView& in);

// Whether a thread per element of the view, in order, reads its source coalesced: the innermost dim of more
// than one element has stride 1, -1 or 0 (a transpose of the innermost dim does not).
bool walks_innermost_contiguously(const StridedView& v);

// The view `node` makes of its input, following views that `follow` admits back to a value they do not
// admit: the result's source is that value. nullopt when `node` is not a view over strides.
template <class Follow>
std::optional<StridedView> view_chain(const Graph& g, const Node& node, Follow follow) {
  if (!is_view_op(node.op) || node.inputs.empty()) return std::nullopt;
  const ValueIndex in = node.inputs[0];
  const Node* p = g.producer(in);
  if (p == nullptr || !follow(*p)) return apply_view(g, node, whole_view(g, in));
  // The producer is followed: its output is never stored, so the chain must hold all the way down.
  std::optional<StridedView> base = view_chain(g, *p, follow);
  if (!base) return std::nullopt;
  return apply_view(g, node, *base);
}

}  // namespace kforge::ir
