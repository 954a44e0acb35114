// What a shape rule sees of a node (shape_infer.cpp), and the rules of the families kept in
// shape_infer_movement.cpp.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "ir/graph.h"

namespace kforge::ir {

struct InferArgs {
  const Graph& g;
  const Node& node;
  const TensorType& in(size_t i) const { return g.type(node.inputs.at(i)); }
  bool has(size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  const Attrs& a() const { return node.attrs; }
  size_t rank() const { return in(0).shape.size(); }
};

// A dim attr made non-negative; an error naming `what` when outside the rank (rank 0 counts as 1).
StatusOr<int64_t> norm_dim(int64_t d, size_t rank, const char* what);

// Families of shape_infer_movement.cpp.
StatusOr<TensorType> infer_Resample(const InferArgs& x);
StatusOr<TensorType> infer_Order(const InferArgs& x);
StatusOr<TensorType> infer_CumExtreme(const InferArgs& x);
StatusOr<TensorType> infer_Scatter(const InferArgs& x);
StatusOr<TensorType> infer_Fold(const InferArgs& x);
// recurrent.cpp.
StatusOr<TensorType> infer_Recurrent(const InferArgs& x);
// fft.cpp.
StatusOr<TensorType> infer_Fft(const InferArgs& x);
// Ops of the Index and Pad families kept there too.
StatusOr<TensorType> infer_one_hot(const InferArgs& x);
StatusOr<TensorType> infer_embedding_bag(const InferArgs& x);
StatusOr<TensorType> infer_mode_pad(const InferArgs& x);  // reflect, replicate, circular
// Bitwise ops: bool or integer operands only.
Status check_bitwise_dtypes(const InferArgs& x);

}  // namespace kforge::ir
