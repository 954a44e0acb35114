// Strided views of the layout ops: each op's sizes, strides and offset from its input's.
#include "ir/strided_view.h"

#include <algorithm>

namespace kforge::ir {

namespace {

int64_t norm(int64_t d, size_t rank) {
  return d < 0 ? d + static_cast<int64_t>(rank) : d;
}

// The strides of `to` over the same elements as (from, strides) in row-major order, when they exist: each run
// of `from`'s dims that is contiguous in memory may be split or merged freely, never across runs.
std::optional<std::vector<int64_t>> reshape_strides(const Shape& from, const std::vector<int64_t>& strides,
                                                    const Shape& to) {
  std::vector<int64_t> out(to.size(), 1);
  int64_t numel = 1;
  for (auto s : to) numel *= s;
  if (numel == 0 || from.empty()) {
    for (size_t d = to.size(); d-- > 1;) out[d - 1] = out[d] * std::max<int64_t>(to[d], 1);
    return out;
  }
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t run_stride = strides.back();  // the stride of the innermost dim of the current contiguous run
  int64_t run_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    run_numel *= from[static_cast<size_t>(d)];
    const bool run_ends = d == 0 || (from[static_cast<size_t>(d - 1)] != 1 &&
                                     strides[static_cast<size_t>(d - 1)] != run_numel * run_stride);
    if (!run_ends) continue;
    while (view_d >= 0 && (view_numel < run_numel || to[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = view_numel * run_stride;
      view_numel *= to[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (d > 0) {
      run_stride = strides[static_cast<size_t>(d - 1)];
      run_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

bool is_view_op(OpId op) {
  switch (op) {
    case OpId::kReshape:
    case OpId::kPermute:
    case OpId::kExpand:
    case OpId::kSlice:
    case OpId::kSelect:
    case OpId::kUnfold:
    case OpId::kFlip: return true;
    default: return false;
  }
}

bool walks_innermost_contiguously(const StridedView& v) {
  for (size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] != 1) return v.strides[d] >= -1 && v.strides[d] <= 1;
  }
  return true;
}

StridedView whole_view(const Graph& g, ValueIndex v) {
  StridedView s;
  s.source = v;
  s.shape = g.type(v).shape;
  s.strides.assign(s.shape.size(), 1);
  for (size_t d = s.shape.size(); d-- > 1;) s.strides[d - 1] = s.strides[d] * s.shape[d];
  return s;
}

std::optional<StridedView> apply_view(const Graph& g, const Node& node, const StridedView& in) {
  if (!is_view_op(node.op)) return std::nullopt;
  const Shape& out_shape = g.type(node.output).shape;
  const size_t rank = in.shape.size();
  StridedView v = in;
  v.shape = out_shape;
  switch (node.op) {
    case OpId::kReshape: {
      auto st = reshape_strides(in.shape, in.strides, out_shape);
      if (!st) return std::nullopt;
      v.strides = *st;
      return v;
    }
    case OpId::kPermute: {
      const auto& dims = node.attrs.ints("dims");
      v.strides.clear();
      for (auto d : dims) v.strides.push_back(in.strides[static_cast<size_t>(norm(d, rank))]);
      return v;
    }
    case OpId::kExpand: {
      const size_t lead = out_shape.size() - rank;
      v.strides.assign(out_shape.size(), 0);
      for (size_t d = 0; d < rank; ++d) {
        v.strides[lead + d] = in.shape[d] == out_shape[lead + d] ? in.strides[d] : 0;
      }
      return v;
    }
    case OpId::kSlice: {
      const auto d = static_cast<size_t>(norm(node.attrs.i("dim"), rank));
      const int64_t n = in.shape[d];
      const int64_t start =
          std::clamp<int64_t>(node.attrs.i("start") < 0 ? node.attrs.i("start") + n : node.attrs.i("start"), 0, n);
      v.offset += start * in.strides[d];
      v.strides[d] *= node.attrs.i("step");
      return v;
    }
    case OpId::kSelect: {
      const auto d = static_cast<size_t>(norm(node.attrs.i("dim"), rank));
      const int64_t idx = node.attrs.i("index") < 0 ? node.attrs.i("index") + in.shape[d] : node.attrs.i("index");
      v.offset += idx * in.strides[d];
      v.strides.erase(v.strides.begin() + static_cast<std::ptrdiff_t>(d));
      return v;
    }
    case OpId::kUnfold: {
      const auto d = static_cast<size_t>(norm(node.attrs.i("dim"), rank));
      v.strides[d] = in.strides[d] * node.attrs.i("step");
      v.strides.push_back(in.strides[d]);
      return v;
    }
    case OpId::kFlip: {
      for (auto raw : node.attrs.ints("dims")) {
        const auto d = static_cast<size_t>(norm(raw, rank));
        if (in.shape[d] == 0) continue;
        v.offset += (in.shape[d] - 1) * v.strides[d];
        v.strides[d] = -v.strides[d];
      }
      return v;
    }
    default: return std::nullopt;
  }
}

}  // namespace kforge::ir
