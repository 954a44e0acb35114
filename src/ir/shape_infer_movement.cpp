// Shape rules of the data-movement families added for arbitrary models (resample and grid_sample, order,
// running extremes, scatter, fold), of one_hot and embedding_bag (Index family) and of the reflect, replicate
// and circular pads (Pad family); bitwise ops' dtype check.
#include <algorithm>

#include "ir/infer_args.h"
#include "ir/shape_rules.h"

namespace kforge::ir {

namespace {

bool is_bitwise(OpId op) {
  return op == OpId::kBitwiseAnd || op == OpId::kBitwiseOr || op == OpId::kBitwiseXor || op == OpId::kBitwiseNot;
}

Status check_int64_index(const TensorType& index, const char* op) {
  if (index.dtype != DType::kInt64)
    return invalid_argument(std::string("needs an int64 index, as torch.") + op + " does, got " +
                            std::string(dtype_name(index.dtype)));
  return Status::ok();
}

}  // namespace

Status check_bitwise_dtypes(const InferArgs& x) {
  if (!is_bitwise(x.node.op)) return Status::ok();
  for (size_t i = 0; i < 2; ++i) {
    if (x.has(i) && is_floating(x.in(i).dtype))
      return invalid_argument("is a bit operation of bool and integer tensors, not of " +
                              std::string(dtype_name(x.in(i).dtype)));
  }
  if (!x.has(1) && x.node.op != OpId::kBitwiseNot && !x.a().is_null("scalar") &&
      std::holds_alternative<double>(x.a().get("scalar")))
    return invalid_argument("is a bit operation: its scalar must be an integer or a bool");
  return Status::ok();
}

// grid_sample: x (N, C, H, W) sampled at grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo), one float dtype, as torch's
// grid_sampler_2d checks.
StatusOr<TensorType> infer_grid_sample(const InferArgs& x) {
  const TensorType& in = x.in(0);
  const TensorType& grid = x.in(1);
  const std::string& mode = x.a().s("mode");
  const std::string& padding = x.a().s("padding_mode");
  if (mode != "bilinear" && mode != "nearest")
    return invalid_argument("mode '" + mode + "' is not supported (bilinear or nearest)");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return invalid_argument("padding_mode '" + padding + "' is not one of zeros, border, reflection");
  if (in.shape.size() != 4) return invalid_argument("samples a 4-D input (N, C, H, W), got " + shape_str(in.shape));
  if (grid.shape.size() != 4 || grid.shape[3] != 2 || grid.shape[0] != in.shape[0])
    return invalid_argument("needs a grid (N, Ho, Wo, 2) with the input's N = " + std::to_string(in.shape[0]) +
                            ", got " + shape_str(grid.shape));
  if (!is_floating(in.dtype) || grid.dtype != in.dtype)
    return invalid_argument("needs a float input and a grid of the same dtype, got " +
                            std::string(dtype_name(in.dtype)) + " and " + std::string(dtype_name(grid.dtype)));
  if (in.shape[2] <= 0 || in.shape[3] <= 0)
    return invalid_argument("samples an input with empty spatial dims " + shape_str(in.shape));
  return TensorType{{in.shape[0], in.shape[1], grid.shape[1], grid.shape[2]}, in.dtype};
}

StatusOr<TensorType> infer_Resample(const InferArgs& x) {
  if (x.node.op == OpId::kGridSample) return infer_grid_sample(x);
  const Shape& in = x.in(0).shape;
  const auto& size = x.a().ints("size");
  if (size.empty() || size.size() > 3)
    return invalid_argument("resamples 1 to 3 trailing dims, got size " + shape_str(size));
  if (in.size() < size.size() + 1)
    return invalid_argument("needs an input of rank >= " + std::to_string(size.size() + 1) + " for size " +
                            shape_str(size) + ", got " + shape_str(in));
  if (!x.a().is_null("scale") && !(x.a().f("scale") > 0))
    return invalid_argument("scale must be positive, got " + std::to_string(x.a().f("scale")));
  if (x.node.op == OpId::kUpsampleLinear && !is_floating(x.in(0).dtype))
    return invalid_argument("linear interpolation needs a float tensor, got " + std::string(dtype_name(x.in(0).dtype)));
  if (x.node.op == OpId::kUpsampleBicubic) {
    if (!is_floating(x.in(0).dtype))
      return invalid_argument("bicubic interpolation needs a float tensor, got " +
                              std::string(dtype_name(x.in(0).dtype)));
    if (size.size() != 2 || in.size() != 4)
      return invalid_argument("bicubic interpolation resamples the last 2 dims of a 4-D (N, C, H, W) input, got " +
                              shape_str(in) + " to size " + shape_str(size));
  }
  Shape out(in.begin(), in.end() - static_cast<std::ptrdiff_t>(size.size()));
  for (size_t k = 0; k < size.size(); ++k) {
    const int64_t n = in[in.size() - size.size() + k];
    if (size[k] <= 0 || n <= 0)
      return invalid_argument("resamples " + shape_str(in) + " to size " + shape_str(size) +
                              ": sizes must be positive");
    out.push_back(size[k]);
  }
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_Order(const InferArgs& x) {
  const TensorType& src = x.in(0);
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), src.shape.size(), "dim"));
  const bool indices = x.node.op == OpId::kArgsort || x.node.op == OpId::kTopkIndices;
  TensorType out{src.shape, indices ? DType::kInt64 : src.dtype};
  if (x.node.op == OpId::kTopk || x.node.op == OpId::kTopkIndices) {
    const int64_t n = src.shape.empty() ? 1 : src.shape[static_cast<size_t>(d)];
    const int64_t k = x.a().i("k");
    if (k < 0 || k > n)
      return invalid_argument("topk k " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "] of dim " +
                              std::to_string(d));
    if (!src.shape.empty()) out.shape[static_cast<size_t>(d)] = k;
  }
  return out;
}

StatusOr<TensorType> infer_CumExtreme(const InferArgs& x) {
  KF_RETURN_IF_ERROR(norm_dim(x.a().i("dim"), x.rank(), "dim").status());
  const bool indices = x.node.op == OpId::kCummaxIndices || x.node.op == OpId::kCumminIndices;
  return TensorType{x.in(0).shape, indices ? DType::kInt64 : x.in(0).dtype};
}

StatusOr<TensorType> infer_Scatter(const InferArgs& x) {
  const TensorType& dst = x.in(0);
  const TensorType& index = x.in(1);
  KF_RETURN_IF_ERROR(check_int64_index(index, "scatter"));
  KF_ASSIGN_OR_RETURN(int64_t d, norm_dim(x.a().i("dim"), dst.shape.size(), "dim"));
  if (index.shape.size() != std::max<size_t>(dst.shape.size(), 1) && !(dst.shape.empty() && index.shape.empty()))
    return invalid_argument("index " + shape_str(index.shape) + " and input " + shape_str(dst.shape) +
                            " need the same number of dims");
  for (size_t k = 0; k < index.shape.size() && k < dst.shape.size(); ++k) {
    if (static_cast<int64_t>(k) != d && index.shape[k] > dst.shape[k])
      return invalid_argument("index " + shape_str(index.shape) + " is larger than input " + shape_str(dst.shape) +
                              " in dim " + std::to_string(k));
  }
  if (x.node.op != OpId::kScatterValue) {
    const TensorType& src = x.in(2);
    if (src.dtype != dst.dtype)
      return invalid_argument("src is " + std::string(dtype_name(src.dtype)) + " but the input is " +
                              std::string(dtype_name(dst.dtype)) + " (torch requires one dtype)");
    if (src.shape.size() != index.shape.size() && !(src.shape.empty() && index.shape.size() <= 1))
      return invalid_argument("index " + shape_str(index.shape) + " and src " + shape_str(src.shape) +
                              " need the same number of dims");
    for (size_t k = 0; k < index.shape.size() && k < src.shape.size(); ++k) {
      if (index.shape[k] > src.shape[k])
        return invalid_argument("index " + shape_str(index.shape) + " is larger than src " + shape_str(src.shape) +
                                " in dim " + std::to_string(k));
    }
  }
  const bool combines = x.node.op == OpId::kScatterAdd || x.node.op == OpId::kScatterAmax ||
                        x.node.op == OpId::kScatterAmin || x.node.op == OpId::kScatterProd;
  if (combines && dst.dtype == DType::kBool)
    return invalid_argument(std::string(op_info(x.node.op).name) + " of a bool tensor (it combines numbers)");
  return dst;
}

StatusOr<TensorType> infer_Fold(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const auto& out_size = x.a().ints("output_size");
  const auto& k = x.a().ints("kernel_size");
  const auto& dil = x.a().ints("dilation");
  const auto& pad = x.a().ints("padding");
  const auto& stride = x.a().ints("stride");
  if (in.size() != 2 && in.size() != 3)
    return invalid_argument("needs an input (N, C * kh * kw, L) or (C * kh * kw, L), got " + shape_str(in));
  for (const auto* v : {&out_size, &k, &dil, &pad, &stride}) {
    if (v->size() != 2) return invalid_argument("takes two values per window parameter (2-D fold)");
  }
  KF_RETURN_IF_ERROR(check_window_params(k, stride, pad, dil));
  const int64_t kk = k[0] * k[1];
  const int64_t ck = in[in.size() - 2];
  if (ck % kk != 0)
    return invalid_argument("input dim " + std::to_string(ck) + " is not a multiple of the kernel's " +
                            std::to_string(kk) + " positions");
  int64_t blocks = 1;
  for (size_t d = 0; d < 2; ++d) {
    if (out_size[d] <= 0) return invalid_argument("output_size must be positive, got " + shape_str(out_size));
    const int64_t n = window_out_size(out_size[d], k[d], stride[d], pad[d], dil[d], false);
    if (n <= 0) return invalid_argument("no window fits output_size " + shape_str(out_size));
    blocks *= n;
  }
  if (in.back() != blocks)
    return invalid_argument("input has " + std::to_string(in.back()) + " blocks, output_size " + shape_str(out_size) +
                            " with these windows has " + std::to_string(blocks));
  Shape out(in.begin(), in.end() - 2);
  out.push_back(ck / kk);
  out.push_back(out_size[0]);
  out.push_back(out_size[1]);
  return TensorType{out, x.in(0).dtype};
}

StatusOr<TensorType> infer_one_hot(const InferArgs& x) {
  KF_RETURN_IF_ERROR(check_int64_index(x.in(0), "nn.functional.one_hot"));
  const int64_t c = x.a().i("num_classes");
  if (c <= 0)
    return invalid_argument("num_classes must be given and positive, got " + std::to_string(c) +
                            " (kforge cannot read it from the data)");
  Shape out = x.in(0).shape;
  out.push_back(c);
  return TensorType{out, DType::kInt64};
}

StatusOr<TensorType> infer_embedding_bag(const InferArgs& x) {
  const TensorType& w = x.in(0);
  const TensorType& index = x.in(1);
  if (w.shape.size() != 2) return invalid_argument("needs a 2-D weight, got " + shape_str(w.shape));
  if (index.dtype != DType::kInt64 && index.dtype != DType::kInt32)
    return invalid_argument("needs an int64 or int32 index tensor, got " + std::string(dtype_name(index.dtype)));
  const std::string& mode = x.a().s("mode");
  if (mode != "sum" && mode != "mean" && mode != "max")
    return invalid_argument("mode must be sum, mean or max, not '" + mode + "'");
  if (!is_floating(w.dtype)) return invalid_argument("needs a float weight, got " + std::string(dtype_name(w.dtype)));
  int64_t bags = 0;
  if (x.has(2)) {
    const TensorType& offsets = x.in(2);
    if (index.shape.size() != 1)
      return invalid_argument("with offsets needs a 1-D index, got " + shape_str(index.shape));
    if (offsets.shape.size() != 1) return invalid_argument("needs 1-D offsets, got " + shape_str(offsets.shape));
    if (offsets.dtype != index.dtype) return invalid_argument("offsets and index need one dtype, as torch requires");
    bags = offsets.shape[0] - (x.a().b("include_last_offset") ? 1 : 0);
    if (bags < 0) return invalid_argument("include_last_offset needs at least one offset");
  } else {
    if (index.shape.size() != 2)
      return invalid_argument("without offsets needs a 2-D index (one bag per row), got " + shape_str(index.shape));
    if (x.a().b("include_last_offset")) return invalid_argument("include_last_offset needs offsets");
    bags = index.shape[0];
  }
  return TensorType{Shape{bags, w.shape[1]}, w.dtype};
}

StatusOr<TensorType> infer_mode_pad(const InferArgs& x) {
  const Shape& in = x.in(0).shape;
  const auto& pad = x.a().ints("pad");
  const std::string what = x.node.op == OpId::kReflectPad     ? "reflect"
                           : x.node.op == OpId::kReplicatePad ? "replicate"
                                                              : "circular";
  if (pad.size() % 2 != 0) return invalid_argument("pad needs (left, right) pairs, got " + shape_str(pad));
  if (pad.size() / 2 > in.size())
    return invalid_argument("pad " + shape_str(pad) + " names more dims than the input " + shape_str(in) + " has");
  Shape out = in;
  for (size_t j = 0; j < pad.size() / 2; ++j) {
    const size_t d = in.size() - 1 - j;
    const int64_t lo = pad[2 * j], hi = pad[2 * j + 1], n = in[d];
    if (lo < 0 || hi < 0)
      return invalid_argument(what + " pad " + shape_str(pad) + " is negative (only constant pads crop)");
    if ((lo > 0 || hi > 0) && n == 0) return invalid_argument(what + " pad of the empty dim " + std::to_string(d));
    if (x.node.op == OpId::kReflectPad && (lo >= n || hi >= n))
      return invalid_argument("reflect pad " + shape_str(pad) + " must be smaller than dim " + std::to_string(d) +
                              " of size " + std::to_string(n));
    if (x.node.op == OpId::kCircularPad && (lo > n || hi > n))
      return invalid_argument("circular pad " + shape_str(pad) + " must be at most dim " + std::to_string(d) +
                              " of size " + std::to_string(n));
    out[d] = n + lo + hi;
  }
  return TensorType{out, x.in(0).dtype};
}

}  // namespace kforge::ir
