// Value ranges: interval rules per op, rounded outward in the value's own floating type.
#include "ir/value_range.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kforge::ir {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// sigmoid and tanh come from exp and tanh, which no two libraries round alike: their bounds widen
// by this much (far above a few ulps of float) and never make a point.
constexpr double kTranscendentalSlack = 1e-6;
// Bounds of a rounded product, sum or quotient move this many ulps outward (one for the operation,
// the rest for a scale factor such as dropout's 1 / (1 - p) that was itself rounded first).
constexpr int kOutwardUlps = 4;

bool tracked(ir::DType t) {
  return t == ir::DType::kFloat32 || t == ir::DType::kFloat64;
}

// A double as the nearest value of t (float32 or float64).
double round_to(ir::DType t, double v) {
  return t == ir::DType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// A bound computed in double, moved outward (toward -inf when down) past any rounding to t. A zero
// computed from float operands is exact (x * c, x / c and x + c are zero in double only when they
// are zero exactly), and infinities stay.
double outward(ir::DType t, double v, bool down) {
  if (v == 0 || std::isinf(v)) return v;
  if (t == ir::DType::kFloat32) {
    float f = static_cast<float>(v);
    for (int i = 0; i < kOutwardUlps; ++i) f = std::nextafter(f, down ? -HUGE_VALF : HUGE_VALF);
    return f;
  }
  for (int i = 0; i < kOutwardUlps; ++i) v = std::nextafter(v, down ? -kInf : kInf);
  return v;
}

ValueRange rounded(ir::DType t, double lo, double hi) {
  return ValueRange::between(outward(t, lo, true), outward(t, hi, false));
}

// x * c for every non-NaN x * c: c == 0 gives 0 (inf * 0 is NaN, every finite x gives +-0).
double times(double x, double c) {
  return c == 0 ? 0.0 : x * c;
}

// One binary op's result as torch computes it in t (a float32 tensor with a Python scalar computes
// in float32): each operand rounded to t, the operation rounded once.
double exact_in(ir::DType t, ir::OpId op, double a, double b) {
  if (t == ir::DType::kFloat32) {
    const float x = static_cast<float>(a);
    const float y = static_cast<float>(b);
    switch (op) {
      case ir::OpId::kAdd: return x + y;
      case ir::OpId::kSub: return x - y;
      case ir::OpId::kMul: return x * y;
      default: return x / y;
    }
  }
  switch (op) {
    case ir::OpId::kAdd: return a + b;
    case ir::OpId::kSub: return a - b;
    case ir::OpId::kMul: return a * b;
    default: return a / b;
  }
}

// clamp(x, lo_c, hi_c) = min(max(x, lo_c), hi_c), torch's definition (all hi_c when lo_c > hi_c); it
// does not decrease, so the bounds map to the bounds.
ValueRange clamp_range(const ValueRange& x, double lo_c, double hi_c) {
  auto f = [&](double v) { return std::min(std::max(v, lo_c), hi_c); };
  return ValueRange::between(f(x.lo), f(x.hi));
}

// A value's range after conversion to the output type t (torch converts operands to the result
// type; rounding to nearest does not decrease, so the bounds convert to the bounds).
ValueRange input_range(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] == ir::kNoValue) return ValueRange::any();
  const ir::DType t = g.type(node.output).dtype;
  const ValueRange& r = ranges[static_cast<size_t>(node.inputs[i])];
  return ValueRange::between(round_to(t, r.lo), round_to(t, r.hi));
}

// A tensor's range, or a scalar attr as a point of the output type.
ValueRange operand(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges, size_t i) {
  if (i < node.inputs.size() && node.inputs[i] != ir::kNoValue) return input_range(g, node, ranges, i);
  if (i == 1 && node.attrs.has("scalar") && !node.attrs.is_null("scalar"))
    return ValueRange::point(round_to(g.type(node.output).dtype, node.attrs.f("scalar")));
  return ValueRange::any();
}

// add, sub, mul, div with one constant operand (a scalar attr or a point tensor).
ValueRange arithmetic_range(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges) {
  const ir::DType t = g.type(node.output).dtype;
  ValueRange a = operand(g, node, ranges, 0);
  ValueRange b = operand(g, node, ranges, 1);
  if (node.attrs.has("reverse") && node.attrs.b("reverse") && node.inputs.size() > 1 && node.inputs[1] == ir::kNoValue)
    std::swap(a, b);
  if (a.is_point() && b.is_point()) {
    if (std::isinf(a.lo) || std::isinf(b.lo)) return ValueRange::any();
    const double v = exact_in(t, node.op, a.lo, b.lo);
    return std::isnan(v) ? ValueRange::any() : ValueRange::point(v);
  }
  switch (node.op) {
    case ir::OpId::kAdd:
    case ir::OpId::kMul: {
      // Commutative: x op c with c the point operand.
      if (!a.is_point() && !b.is_point()) return ValueRange::any();
      const ValueRange& x = b.is_point() ? a : b;
      const double c = b.is_point() ? b.lo : a.lo;
      if (std::isinf(c)) return ValueRange::any();
      if (node.op == ir::OpId::kAdd) return rounded(t, x.lo + c, x.hi + c);
      const double p = times(x.lo, c);
      const double q = times(x.hi, c);
      return rounded(t, std::min(p, q), std::max(p, q));
    }
    case ir::OpId::kSub:
      if (b.is_point() && !std::isinf(b.lo)) return rounded(t, a.lo - b.lo, a.hi - b.lo);
      if (a.is_point() && !std::isinf(a.lo)) return rounded(t, a.lo - b.hi, a.lo - b.lo);
      return ValueRange::any();
    case ir::OpId::kDiv: {
      // x / c only: c / x is unbounded near x = 0.
      if (!b.is_point() || b.lo == 0 || std::isinf(b.lo)) return ValueRange::any();
      const double p = a.lo / b.lo;
      const double q = a.hi / b.lo;
      return rounded(t, std::min(p, q), std::max(p, q));
    }
    default: return ValueRange::any();
  }
}

// Dropout in training mode keeps x * (1 / (1 - p)) or writes 0 (the mask times x; torch rounds the
// scale to the tensor's type first). p == 1 gives x * 0: 0 for every non-NaN result.
ValueRange dropout_range(const ir::Graph& g, const ir::Node& node, const ValueRange& x) {
  const double p = node.attrs.f("p");
  if (!node.attrs.b("training") || p == 0) return x;
  if (p == 1) return ValueRange::point(0);
  if (!(p > 0 && p < 1)) return ValueRange::any();
  const ir::DType t = g.type(node.output).dtype;
  const double scale = 1.0 / (1.0 - p);
  return ValueRange::between(std::min(0.0, outward(t, x.lo * scale, true)),
                             std::max(0.0, outward(t, x.hi * scale, false)));
}

ValueRange union_of(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges) {
  ValueRange r = ValueRange::between(kInf, -kInf);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == ir::kNoValue) continue;
    const ValueRange in = input_range(g, node, ranges, i);
    r.lo = std::min(r.lo, in.lo);
    r.hi = std::max(r.hi, in.hi);
  }
  return r.lo > r.hi ? ValueRange::any() : r;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

}  // namespace

bool ValueRange::is_any() const {
  return lo == -kInf && hi == kInf;
}

std::string ValueRange::str() const {
  if (is_any()) return "any";
  char buf[80];
  if (is_point()) {
    std::snprintf(buf, sizeof buf, "{%g}", lo);
  } else {
    std::snprintf(buf, sizeof buf, "[%g, %g]", lo, hi);
  }
  return buf;
}

ValueRange node_range(const ir::Graph& g, const ir::Node& node, const std::vector<ValueRange>& ranges) {
  const ir::DType t = g.type(node.output).dtype;
  if (!tracked(t)) return ValueRange::any();
  const ValueRange x = input_range(g, node, ranges, 0);
  auto attr_or = [&](const char* name, double fallback) {
    return node.attrs.has(name) && !node.attrs.is_null(name) ? round_to(t, node.attrs.f(name)) : fallback;
  };
  switch (node.op) {
    case ir::OpId::kFull: return ValueRange::point(round_to(t, node.attrs.f("value")));
    case ir::OpId::kMinimum:
    case ir::OpId::kMaximum: {
      const ValueRange a = operand(g, node, ranges, 0);
      const ValueRange b = operand(g, node, ranges, 1);
      if (node.op == ir::OpId::kMinimum) return ValueRange::between(std::min(a.lo, b.lo), std::min(a.hi, b.hi));
      return ValueRange::between(std::max(a.lo, b.lo), std::max(a.hi, b.hi));
    }
    case ir::OpId::kClamp: return clamp_range(x, attr_or("min", -kInf), attr_or("max", kInf));
    case ir::OpId::kHardTanh: return clamp_range(x, attr_or("min_val", -1.0), attr_or("max_val", 1.0));
    case ir::OpId::kRelu: return clamp_range(x, 0.0, kInf);
    case ir::OpId::kSigmoid:
      // 1 / (1 + exp(-x)) with exp(-x) >= 0 rounds into [0, 1] in any IEEE arithmetic.
      return ValueRange::between(std::max(0.0, sigmoid(x.lo) - kTranscendentalSlack),
                                 std::min(1.0, sigmoid(x.hi) + kTranscendentalSlack));
    case ir::OpId::kTanh:
      return ValueRange::between(std::max(-1.0, std::tanh(x.lo) - kTranscendentalSlack),
                                 std::min(1.0, std::tanh(x.hi) + kTranscendentalSlack));
    case ir::OpId::kNeg: return ValueRange::between(-x.hi, -x.lo);
    case ir::OpId::kIdentity: return x;
    case ir::OpId::kDropout: return dropout_range(g, node, x);
    case ir::OpId::kAdd:
    case ir::OpId::kSub:
    case ir::OpId::kMul:
    case ir::OpId::kDiv: return arithmetic_range(g, node, ranges);
    case ir::OpId::kReshape:
    case ir::OpId::kPermute:
    case ir::OpId::kExpand:
    case ir::OpId::kSlice:
    case ir::OpId::kSelect:
    case ir::OpId::kFlip:
    // Elements of input 0 (the embedding's table), moved.
    case ir::OpId::kEmbedding:
    case ir::OpId::kIndexSelect:
    case ir::OpId::kGather:
    case ir::OpId::kUnfold:
    case ir::OpId::kReflectPad:
    case ir::OpId::kReplicatePad:
    case ir::OpId::kCircularPad:
    case ir::OpId::kUpsampleNearest:
    case ir::OpId::kSort:
    case ir::OpId::kTopk:
    case ir::OpId::kCummax:
    case ir::OpId::kCummin: return x;
    case ir::OpId::kEmbeddingBag: return node.attrs.s("mode") == "max" ? x : ValueRange::any();
    case ir::OpId::kConstantPad:
    case ir::OpId::kScatterValue: {
      const double v = round_to(t, node.attrs.f("value"));
      if (std::isnan(v) || x.is_any()) return ValueRange::any();
      return ValueRange::between(std::min(x.lo, v), std::max(x.hi, v));
    }
    case ir::OpId::kScatter:
    case ir::OpId::kScatterAmax:
    case ir::OpId::kScatterAmin: {
      const ValueRange src = input_range(g, node, ranges, 2);
      if (x.is_any() || src.is_any()) return ValueRange::any();
      return ValueRange::between(std::min(x.lo, src.lo), std::max(x.hi, src.hi));
    }
    case ir::OpId::kCat:
    case ir::OpId::kStack: return union_of(g, node, ranges);
    default: return ValueRange::any();
  }
}

std::vector<ValueRange> value_ranges(const ir::Graph& g) {
  std::vector<ValueRange> ranges(g.values().size(), ValueRange::any());
  for (const ir::Node& node : g.nodes()) ranges[static_cast<size_t>(node.output)] = node_range(g, node, ranges);
  return ranges;
}

}  // namespace kforge::ir
