// Shape and dtype inference, one rule per op family (op_families.def); a family without a rule
// fails to link.
#include <algorithm>
#include <numeric>

#include "ir/graph.h"
#include "ir/infer_args.h"
#include "ir/shape_rules.h"

namespace kforge::ir {

StatusOr<int64_t> norm_dim(int64_t d, size_t rank, const char* what) {
  int64_t r = static_cast<int64_t>(std::max<size_t>(rank, 1));
  int64_t nd = d < 0 ? d + r : d;
  if (nd < 0 || nd >= r) {
    return invalid_argument(std::string(what) + " " + std::to_string(d) + " is out of range for rank " +
                            std::to_string(rank));
  }
  return nd;
}

namespace {

using Rule = StatusOr<TensorType> (*)(const InferArgs&);

DType scalar_promote(DType t, const AttrValue& scalar) {
  if (std::holds_alternative<double>(scalar) && is_integral(t)) return DType::kFloat32;
  if (std::holds_alternative<int64_t>(scalar) && t == DType::kBool) return DType::kInt64;
  return t;
}

// Transcendental unary ops of integer tensors give float32, as in torch.
bool keeps_integer_dtype(OpId op) {
  switch (op) {
    case OpId::kRelu:
    case OpId::kAbs:
    case OpId::kNeg:
    case OpId::kSign:
    case OpId::kClamp:
    case OpId::kHardTanh:
    case OpId::kIdentity:
    case OpId::kBitwiseNot:
    case OpId::kFloor:
    case OpId::kCeil:
    case OpId::kRound:
    case OpId::kTrunc:
    case OpId::kDropout: return true;
    default: return false;
  }
}

StatusOr<TensorType> infer_Unary(const InferArgs& x) {
  if (x.node.op == OpId::kBitwiseNot) KF_RETURN_IF_ERROR(check_bitwise_dtypes(x));
  TensorType t = x.in(0);
  if (is_integral(t.dtype) && !keeps_integer_dtype(x.node.op)) t.dtype = DType::kFloat32;
  if (x.node.op == OpId::kPowScalar && is_integral(t.dtype) &&
      x.a().f("exponent") != static_cast<double>(static_cast<int64_t>(x.a().f("exponent")))) {
    t.dtype = DType::kFloat32;
  }
  return t;
}

StatusOr<TensorType> infer_Cast(const InferArgs& x) {
  return TensorType{x.in(0).shape, *dtype_from_name(x.a().s("dtype"))};
}

StatusOr<TensorType> infer_Binary(const InferArgs& x) {
  KF_RETURN_IF_ERROR(check_bitwise_dtypes(x));
  TensorType out;
  if (x.has(1)) {
    if (!x.a().is_null("scalar")) return invalid_argument("takes either a second tensor or a scalar, not both");
    KF_ASSIGN_OR_RETURN(out.shape, broadcast_shapes(x.in(0).shape, x.in(1).shape));
    DType a = x.in(0).dtype;
    DType b = x.in(1).dtype;
    // A 0-dim tensor does not raise the category-internal type of a dimensioned one (torch's rule).
    if (x.in(1).shape.empty() && !x.in(0).shape.empty() && is_floating(a) == is_floating(b)) b = a;
    if (x.in(0).shape.empty() && !x.in(1).shape.empty() && is_floating(a) == is_floating(b)) a = b;
    out.dtype = promote(a, b);
  } else {
    if (x.a().is_null("scalar")) return invalid_argument("needs a second tensor or a scalar");
    out.shape = x.in(0).shape;
    out.dtype = scalar_promote(x.in(0).dtype, x.a().get("scalar"));
  }
  const bool to_float =
      x.node.op == OpId::kDiv || x.node.op == OpId::kAtan2 || x.node.op == OpId::kHypot || x.node.op == OpId::kZeta;
  if (to_float && is_integral(out.dtype)) out.dtype = DType::kFloat32;
  return out;
}

StatusOr<TensorType> infer_Compare(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(TensorType t, infer_Binary(x));
  t.dtype = DType::kBool;
  return t;
}

StatusOr<TensorType> infer_Where(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(x.in(0).shape, x.in(1).shape));
  KF_ASSIGN_OR_RETURN(s, broadcast_shapes(s, x.in(2).shape));
  return TensorType{s, promote(x.in(1).dtype, x.in(2).dtype)};
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

StatusOr<TensorType> infer_Reduce(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(auto dims, reduction_dims(x.a().ints("dims"), x.rank()));
  TensorType t{reduced_shape(x.in(0).shape, dims, x.a().b("keepdim")), x.in(0).dtype};
  switch (x.node.op) {
    case OpId::kSum:
    case OpId::kProd:
      if (is_integral(t.dtype)) t.dtype = DType::kInt64;
      break;
    case OpId::kMean:
    case OpId::kNorm:
    case OpId::kVar:
    case OpId::kLogSumExp:
      if (is_integral(t.dtype))
        return invalid_argument("needs a floating-point input, got " + std::string(dtype_name(t.dtype)));
      break;
    default: break;
  }
  return t;
}

StatusOr<TensorType> infer_ArgReduce(const InferArgs& x) {
  if (x.a().is_null("dim")) {
    return TensorType{x.a().b("keepdim") ? Shape(x.rank(), 1) : Shape{}, DType::kInt64};
  }
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), x.rank(), "dim"));
  return TensorType{reduced_shape(x.in(0).shape, {d}, x.a().b("keepdim")), DType::kInt64};
}

StatusOr<TensorType> infer_Softmax(const InferArgs& x) {
  KF_RETURN_IF_ERROR(norm_dim(x.a().i("dim"), x.rank(), "dim").status());
  TensorType t = x.in(0);
  if (is_integral(t.dtype)) t.dtype = DType::kFloat32;
  return t;
}

StatusOr<TensorType> infer_Norm(const InferArgs& x) {
  const Shape& s = x.in(0).shape;
  switch (x.node.op) {
    case OpId::kBatchNorm:
    case OpId::kInstanceNorm:
      if (s.size() < 2) return invalid_argument("needs an input of rank >= 2 (N, C, ...), got " + shape_str(s));
      for (size_t i = 1; i < 5; ++i) {
        if (x.has(i) && x.in(i).numel() != s[1]) {
          return invalid_argument("per-channel tensor " + std::to_string(i) + " has " +
                                  std::to_string(x.in(i).numel()) + " elements for " + std::to_string(s[1]) +
                                  " channels");
        }
      }
      break;
    case OpId::kGroupNorm: {
      int64_t groups = x.a().i("num_groups");
      if (s.size() < 2 || groups <= 0 || s[1] % groups != 0) {
        return invalid_argument("channels of " + shape_str(s) + " do not split into " + std::to_string(groups) +
                                " groups");
      }
      break;
    }
    case OpId::kLayerNorm: {
      const auto& ns = x.a().ints("normalized_shape");
      if (ns.size() > s.size() || !std::equal(ns.begin(), ns.end(), s.end() - static_cast<long>(ns.size()))) {
        return invalid_argument("normalized_shape " + shape_str(ns) + " is not a suffix of the input shape " +
                                shape_str(s));
      }
      break;
    }
    default: break;
  }
  return x.in(0);
}

StatusOr<TensorType> infer_Matmul(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(Shape s, matmul_shape(x.in(0).shape, x.in(1).shape));
  return TensorType{s, promote(x.in(0).dtype, x.in(1).dtype)};
}

StatusOr<TensorType> infer_Linear(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const Shape& w = x.in(1).shape;
  if (w.size() != 2 || in.empty() || in.back() != w[1]) {
    return invalid_argument("linear of input " + shape_str(in) + " with weight " + shape_str(w) +
                            ": feature sizes differ");
  }
  if (x.has(2) && x.in(2).numel() != w[0]) return invalid_argument("bias has the wrong size");
  Shape out = in;
  out.back() = w[0];
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Einsum(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(EinsumSpec spec, parse_einsum(x.a().s("equation"), x.node.inputs.size()));
  std::map<char, int64_t> size;
  DType dt = x.in(0).dtype;
  for (size_t i = 0; i < spec.operands.size(); ++i) {
    const Shape& s = x.in(i).shape;
    if (s.size() != spec.operands[i].size()) {
      return invalid_argument("einsum operand " + std::to_string(i) + " has rank " + std::to_string(s.size()) +
                              " but subscripts '" + spec.operands[i] + "'");
    }
    for (size_t d = 0; d < s.size(); ++d) {
      char c = spec.operands[i][d];
      if (size.count(c) && size[c] != s[d] && size[c] != 1 && s[d] != 1) {
        return invalid_argument(std::string("einsum subscript '") + c + "' has sizes " + std::to_string(size[c]) +
                                " and " + std::to_string(s[d]));
      }
      size[c] = std::max(size[c], s[d]);
    }
    dt = promote(dt, x.in(i).dtype);
  }
  Shape out;
  for (char c : spec.output) {
    if (!size.count(c))
      return invalid_argument(std::string("einsum output subscript '") + c + "' appears in no operand");
    out.push_back(size[c]);
  }
  return TensorType{out, dt};
}

StatusOr<TensorType> infer_Conv(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const Shape& w = x.in(1).shape;
  size_t sp = w.size() - 2;
  const auto& stride = x.a().ints("stride");
  const auto& pad = x.a().ints("padding");
  const auto& dil = x.a().ints("dilation");
  int64_t groups = x.a().i("groups");
  if (w.size() < 3 || in.size() != w.size())
    return invalid_argument("needs a batched input " + shape_str(in) + " of the weight's rank " + shape_str(w));
  if (stride.size() != sp || pad.size() != sp || dil.size() != sp)
    return invalid_argument("stride, padding and dilation need one entry per spatial dim");
  if (groups < 1) return invalid_argument("groups must be at least 1");
  KF_RETURN_IF_ERROR(check_window_params(Shape(w.begin() + 2, w.end()), stride, pad, dil));
  if (in[1] != w[1] * groups)
    return invalid_argument("input channels " + std::to_string(in[1]) + " != weight " + shape_str(w) + " x groups " +
                            std::to_string(groups));
  Shape out{in[0], w[0]};
  for (size_t i = 0; i < sp; ++i) out.push_back(window_out_size(in[2 + i], w[2 + i], stride[i], pad[i], dil[i], false));
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_ConvTranspose(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const Shape& w = x.in(1).shape;
  size_t sp = w.size() - 2;
  const auto& stride = x.a().ints("stride");
  const auto& pad = x.a().ints("padding");
  const auto& opad = x.a().ints("output_padding");
  const auto& dil = x.a().ints("dilation");
  int64_t groups = x.a().i("groups");
  if (w.size() < 3 || in.size() != w.size())
    return invalid_argument("needs a batched input " + shape_str(in) + " of the weight's rank " + shape_str(w));
  if (stride.size() != sp || pad.size() != sp || dil.size() != sp || opad.size() != sp) {
    return invalid_argument("stride, padding, output_padding and dilation need one entry per spatial dim");
  }
  if (groups < 1) return invalid_argument("groups must be at least 1");
  KF_RETURN_IF_ERROR(check_window_params(Shape(w.begin() + 2, w.end()), stride, pad, dil, opad));
  if (in[1] != w[0])
    return invalid_argument("input channels " + std::to_string(in[1]) + " != weight dim 0 of " + shape_str(w));
  Shape out{in[0], w[1] * groups};
  for (size_t i = 0; i < sp; ++i)
    out.push_back(conv_transpose_out_size(in[2 + i], w[2 + i], stride[i], pad[i], dil[i], opad[i]));
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Attention(const InferArgs& x) {
  const Shape& q = x.in(0).shape;
  const Shape& k = x.in(1).shape;
  const Shape& v = x.in(2).shape;
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size() || q.back() != k.back() ||
      k[k.size() - 2] != v[v.size() - 2]) {
    return invalid_argument("attention shapes q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v) +
                            " do not fit");
  }
  Shape out = q;
  out.back() = v.back();
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Pool(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const auto& k = x.a().ints("kernel_size");
  const auto& s = x.a().ints("stride");
  const auto& p = x.a().ints("padding");
  size_t sp = k.size();
  if (sp == 0 || in.size() < sp + 1)
    return invalid_argument("input " + shape_str(in) + " has too few dims for a " + std::to_string(sp) + "-d pool");
  if (s.size() != sp || p.size() != sp)
    return invalid_argument("kernel_size, stride and padding need one entry per spatial dim");
  bool is_max = x.node.op == OpId::kMaxPool;
  std::vector<int64_t> dil = is_max ? x.a().ints("dilation") : std::vector<int64_t>(sp, 1);
  if (dil.size() != sp) return invalid_argument("dilation needs one entry per spatial dim");
  KF_RETURN_IF_ERROR(check_window_params(k, s, p, dil));
  Shape out(in.begin(), in.end() - static_cast<long>(sp));
  for (size_t i = 0; i < sp; ++i) {
    if (2 * p[i] > k[i]) return invalid_argument("padding must be at most half the kernel size");
    out.push_back(window_out_size(in[in.size() - sp + i], k[i], s[i], p[i], dil[i], x.a().b("ceil_mode")));
  }
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_AdaptivePool(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const auto& os = x.a().ints("output_size");
  if (in.size() < os.size() + 1)
    return invalid_argument("input " + shape_str(in) + " has too few dims for the output size");
  Shape out(in.begin(), in.end() - static_cast<long>(os.size()));
  for (size_t i = 0; i < os.size(); ++i) out.push_back(os[i] < 0 ? in[in.size() - os.size() + i] : os[i]);
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Scan(const InferArgs& x) {
  KF_RETURN_IF_ERROR(norm_dim(x.a().i("dim"), x.rank(), "dim").status());
  TensorType t = x.in(0);
  if (is_integral(t.dtype)) t.dtype = DType::kInt64;
  return t;
}

StatusOr<TensorType> reduced_loss(const InferArgs& x, Shape unreduced) {
  const std::string& r = x.a().s("reduction");
  if (r == "none") return TensorType{std::move(unreduced), x.in(0).dtype};
  if (r == "mean" || r == "sum" || (r == "batchmean" && x.node.op == OpId::kKlDiv))
    return TensorType{Shape{}, x.in(0).dtype};
  return invalid_argument("unknown reduction '" + r + "'");
}

StatusOr<TensorType> infer_Loss(const InferArgs& x) {
  const Shape& a = x.in(0).shape;
  const Shape& b = x.in(1).shape;
  if (x.node.op == OpId::kCrossEntropy) {
    if (a.size() < 1) return invalid_argument("logits need a class dim");
    if (is_integral(x.in(1).dtype)) {
      Shape expect = a;
      if (a.size() >= 2)
        expect.erase(expect.begin() + 1);
      else
        expect.clear();
      if (b != expect)
        return invalid_argument("class-index targets " + shape_str(b) + " do not fit logits " + shape_str(a));
      return reduced_loss(x, expect);
    }
    if (a != b) return invalid_argument("probability targets must have the logits' shape");
    Shape un = a;
    if (a.size() >= 2)
      un.erase(un.begin() + 1);
    else
      un.clear();
    return reduced_loss(x, un);
  }
  KF_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(a, b));
  return reduced_loss(x, s);
}

StatusOr<TensorType> infer_TripletLoss(const InferArgs& x) {
  const Shape& a = x.in(0).shape;
  if (x.in(1).shape != a || x.in(2).shape != a) return invalid_argument("anchor, positive and negative need one shape");
  Shape un(a.begin(), a.end() - 1);
  return reduced_loss(x, un);
}

StatusOr<TensorType> infer_Reshape(const InferArgs& x) {
  Shape s = x.a().ints("shape");
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer_at >= 0) return invalid_argument("reshape has more than one -1");
      infer_at = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  int64_t n = x.in(0).numel();
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      return invalid_argument("cannot reshape " + shape_str(x.in(0).shape) + " to " + shape_str(s));
    s[static_cast<size_t>(infer_at)] = n / known;
  } else if (known != n) {
    return invalid_argument("cannot reshape " + shape_str(x.in(0).shape) + " (" + std::to_string(n) + " elements) to " +
                            shape_str(s));
  }
  return TensorType{s, x.in(0).dtype};
}

StatusOr<TensorType> infer_Permute(const InferArgs& x) {
  const auto& dims = x.a().ints("dims");
  const Shape& in = x.in(0).shape;
  if (dims.size() != in.size()) return invalid_argument("permute needs one dim per input dim");
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (auto d : dims) {
    KF_ASSIGN_OR_RETURN(int64_t nd, norm_dim(d, in.size(), "dim"));
    if (seen[static_cast<size_t>(nd)]) return invalid_argument("permute repeats dim " + std::to_string(nd));
    seen[static_cast<size_t>(nd)] = true;
    out.push_back(in[static_cast<size_t>(nd)]);
  }
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Expand(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  Shape s = x.a().ints("shape");
  if (s.size() < in.size()) return invalid_argument("expand to fewer dims than the input has");
  size_t lead = s.size() - in.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) {
      if (s[i] < 0) return invalid_argument("expand: -1 is not allowed in new leading dims");
      continue;
    }
    int64_t d = in[i - lead];
    if (s[i] == -1) s[i] = d;
    if (d != 1 && d != s[i])
      return invalid_argument("cannot expand " + shape_str(in) + " to " + shape_str(x.a().ints("shape")));
  }
  return TensorType{s, x.in(0).dtype};
}

StatusOr<TensorType> infer_Slice(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), x.rank(), "dim"));
  Shape s = x.in(0).shape;
  int64_t n = s[static_cast<size_t>(d)];
  int64_t start = std::clamp<int64_t>(x.a().i("start") < 0 ? x.a().i("start") + n : x.a().i("start"), 0, n);
  int64_t end = std::clamp<int64_t>(x.a().i("end") < 0 ? x.a().i("end") + n : x.a().i("end"), 0, n);
  int64_t step = x.a().i("step");
  if (step <= 0) return invalid_argument("slice step must be positive");
  s[static_cast<size_t>(d)] = end > start ? (end - start + step - 1) / step : 0;
  return TensorType{s, x.in(0).dtype};
}

StatusOr<TensorType> infer_Select(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), x.rank(), "dim"));
  Shape s = x.in(0).shape;
  int64_t n = s[static_cast<size_t>(d)];
  int64_t idx = x.a().i("index");
  if (idx < -n || idx >= n)
    return invalid_argument("select index " + std::to_string(idx) + " out of range for size " + std::to_string(n));
  s.erase(s.begin() + d);
  return TensorType{s, x.in(0).dtype};
}

StatusOr<TensorType> infer_Flip(const InferArgs& x) {
  for (auto d : x.a().ints("dims")) KF_RETURN_IF_ERROR(norm_dim(d, x.rank(), "dim").status());
  return x.in(0);
}

StatusOr<TensorType> infer_Cat(const InferArgs& x) {
  if (x.node.inputs.empty()) return invalid_argument("needs at least one tensor");
  const Shape& first = x.in(0).shape;
  DType dt = x.in(0).dtype;
  bool stack = x.node.op == OpId::kStack;
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), first.size() + (stack ? 1 : 0), "dim"));
  Shape out = first;
  int64_t total = 0;
  for (size_t i = 0; i < x.node.inputs.size(); ++i) {
    const Shape& s = x.in(i).shape;
    dt = promote(dt, x.in(i).dtype);
    if (s.size() != first.size()) return invalid_argument("tensors of different ranks");
    for (size_t k = 0; k < s.size(); ++k) {
      if ((stack || static_cast<int64_t>(k) != d) && s[k] != first[k]) {
        return invalid_argument("shapes " + shape_str(first) + " and " + shape_str(s) +
                                " differ outside the joined dim");
      }
    }
    if (!stack) total += s[static_cast<size_t>(d)];
  }
  if (stack) {
    out.insert(out.begin() + d, static_cast<int64_t>(x.node.inputs.size()));
  } else {
    out[static_cast<size_t>(d)] = total;
  }
  return TensorType{out, dt};
}

StatusOr<TensorType> infer_Diag(const InferArgs& x) {
  const Shape& s = x.in(0).shape;
  int64_t k = x.a().i("diagonal");
  if (s.size() == 1) {
    int64_t n = s[0] + std::abs(k);
    return TensorType{Shape{n, n}, x.in(0).dtype};
  }
  if (s.size() == 2) {
    int64_t len = k >= 0 ? std::min(s[0], s[1] - k) : std::min(s[0] + k, s[1]);
    return TensorType{Shape{std::max<int64_t>(len, 0)}, x.in(0).dtype};
  }
  return invalid_argument("diag needs a 1-D or 2-D tensor, got " + shape_str(s));
}

StatusOr<TensorType> infer_Triangle(const InferArgs& x) {
  if (x.rank() < 2) return invalid_argument("needs a tensor of rank >= 2");
  return x.in(0);
}

StatusOr<TensorType> infer_Full(const InferArgs& x) {
  for (auto d : x.a().ints("shape")) {
    if (d < 0) return invalid_argument("negative size in full");
  }
  return TensorType{x.a().ints("shape"), *dtype_from_name(x.a().s("dtype"))};
}

StatusOr<TensorType> infer_Logical(const InferArgs& x) {
  if (x.node.inputs.size() == 1) return TensorType{x.in(0).shape, DType::kBool};  // not, isnan, ...
  KF_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(x.in(0).shape, x.in(1).shape));
  return TensorType{s, DType::kBool};
}

// An index tensor: int64 or int32 (torch's embedding and index_select take both, gather int64).
Status check_index_dtype(const TensorType& index) {
  if (index.dtype != DType::kInt64 && index.dtype != DType::kInt32)
    return invalid_argument("needs an int64 or int32 index tensor, got " + std::string(dtype_name(index.dtype)));
  return Status::ok();
}

StatusOr<TensorType> infer_Index(const InferArgs& x) {
  if (x.node.op == OpId::kOneHot) return infer_one_hot(x);
  if (x.node.op == OpId::kEmbeddingBag) return infer_embedding_bag(x);
  const TensorType& src = x.in(0);
  const TensorType& index = x.in(1);
  KF_RETURN_IF_ERROR(check_index_dtype(index));
  switch (x.node.op) {
    case OpId::kEmbedding: {
      if (src.shape.size() != 2) return invalid_argument("needs a 2-D weight, got " + shape_str(src.shape));
      Shape out = index.shape;
      out.push_back(src.shape[1]);
      return TensorType{out, src.dtype};
    }
    case OpId::kIndexSelect: {
      KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), src.shape.size(), "dim"));
      if (index.shape.size() > 1) return invalid_argument("needs a 1-D index, got " + shape_str(index.shape));
      if (src.shape.empty()) return TensorType{Shape{}, src.dtype};
      Shape out = src.shape;
      out[static_cast<size_t>(d)] = index.numel();
      return TensorType{out, src.dtype};
    }
    case OpId::kGather: {
      KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), src.shape.size(), "dim"));
      if (index.shape.size() != src.shape.size() && !(src.shape.empty() && index.shape.size() <= 1))
        return invalid_argument("index " + shape_str(index.shape) + " and input " + shape_str(src.shape) +
                                " need the same number of dims");
      if (index.dtype != DType::kInt64) return invalid_argument("needs an int64 index, as torch.gather does");
      for (size_t k = 0; k < index.shape.size() && k < src.shape.size(); ++k) {
        if (static_cast<int64_t>(k) != d && index.shape[k] > src.shape[k])
          return invalid_argument("index " + shape_str(index.shape) + " is larger than input " + shape_str(src.shape) +
                                  " in dim " + std::to_string(k));
      }
      return TensorType{index.shape, src.dtype};
    }
    default: return internal_error("infer_Index: not an index op");
  }
}

StatusOr<TensorType> infer_Unfold(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  if (in.empty()) return unsupported("unfold of a 0-dim tensor");
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), in.size(), "dim"));
  const int64_t n = in[static_cast<size_t>(d)];
  const int64_t size = x.a().i("size");
  const int64_t step = x.a().i("step");
  if (size < 0 || size > n)
    return invalid_argument("unfold size " + std::to_string(size) + " does not fit dim " + std::to_string(d) +
                            " of size " + std::to_string(n));
  if (step <= 0) return invalid_argument("unfold step must be positive, not " + std::to_string(step));
  Shape out = in;
  out[static_cast<size_t>(d)] = (n - size) / step + 1;
  out.push_back(size);
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Pad(const InferArgs& x) {
  if (x.node.op != OpId::kConstantPad) return infer_mode_pad(x);
  const Shape& in = x.in(0).shape;
  const auto& pad = x.a().ints("pad");
  if (pad.size() % 2 != 0) return invalid_argument("pad needs (left, right) pairs, got " + shape_str(pad));
  if (pad.size() / 2 > in.size())
    return invalid_argument("pad " + shape_str(pad) + " names more dims than the input " + shape_str(in) + " has");
  Shape out = in;
  for (size_t j = 0; j < pad.size() / 2; ++j) {
    const size_t d = in.size() - 1 - j;
    const int64_t len = in[d] + pad[2 * j] + pad[2 * j + 1];
    if (len < 0)
      return invalid_argument("pad " + shape_str(pad) + " crops dim " + std::to_string(d) + " of size " +
                              std::to_string(in[d]) + " below zero");
    out[d] = len;
  }
  return TensorType{out, x.in(0).dtype};
}

Rule rule_for(OpFamily f) {
  switch (f) {
#define KF_FAMILY(name)   \
  case OpFamily::k##name: \
    return &infer_##name;
#include "ir/op_families.def"
#undef KF_FAMILY
  }
  return nullptr;
}

}  // namespace

StatusOr<TensorType> infer_type(const Graph& g, const Node& node) {
  const OpInfo& info = op_info(node.op);
  for (size_t i = 0; i < node.inputs.size() && i < info.inputs.size(); ++i) {
    if (node.inputs[i] == kNoValue && !info.inputs[i].optional)
      return invalid_argument("input '" + info.inputs[i].name + "' is missing");
  }
  if (node.inputs.size() < info.min_inputs()) return invalid_argument("has too few inputs");
  return rule_for(info.family)(InferArgs{g, node});
}

}  // namespace kforge::ir
