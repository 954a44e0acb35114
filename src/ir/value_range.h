// Value ranges: a conservative interval [lo, hi] for every value of a graph, from the inputs forward
// through the ops whose range rules are simple and exact. The analysis the constant_output skill uses
// to prove an output constant for every input.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge::ir {

// Every element of the tensor that is not NaN lies in [lo, hi] (closed, infinities included). The
// range says nothing about NaN: each op covered maps a NaN operand to NaN (torch's min, max, clamp,
// relu, sigmoid, tanh, arithmetic and dropout all do), and some make NaN from non-NaN operands
// (inf * 0, inf - inf), so "the output is the constant c" reads "every element that is not NaN is c".
struct ValueRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();

  static ValueRange any() { return {}; }
  static ValueRange point(double v) { return {v, v}; }
  static ValueRange between(double lo, double hi) { return {lo, hi}; }

  bool is_any() const;
  bool is_point() const { return lo == hi; }
  std::string str() const;  // "[0, 1]", "{0}", "any"
  bool operator==(const ValueRange&) const = default;
};

// One range per graph value, indexed like Graph::values(). Inputs and params are any (their
// distribution in get_inputs() is not a promise about every input); a node's range follows from its
// inputs' by its op's rule (node_range). Only float32 and float64 values get ranges narrower than
// any: the rules round in those types exactly as torch does.
std::vector<ValueRange> value_ranges(const ir::Graph& g);

// The range of one node's output, given the ranges of the values before it. Covered: full;
// minimum and maximum with a constant or a tensor of known range; clamp, hardtanh, relu, sigmoid,
// tanh, neg, identity; add, sub, mul, div with a constant; dropout (eval: identity; training:
// the input's range joined with 0 and scaled by 1 / (1 - p), so {0} stays {0}); ops that only
// move values (reshape, permute, expand, slice, select, flip, cat, embedding, index_select, gather,
// unfold, the reflect/replicate/circular pads, upsample_nearest, sort, topk, cummax, cummin,
// embedding_bag's max); constant_pad and scatter_value (the input's range joined with the value);
// scatter (the input's joined with src's). Any other op is any.
ValueRange node_range(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges);

}  // namespace kforge::ir
