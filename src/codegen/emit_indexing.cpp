// Indexing, window and padding families (embedding, index_select, gather, one_hot; unfold; constant_pad): gather
// kernels as in the layout families, one thread per output element, consecutive threads on consecutive
// output elements (the innermost dim, so the stores and, where the innermost dim is copied, the loads
// coalesce). An index read from an index tensor is checked against the indexed dim's size: torch raises
// on an out-of-range index, so the kernel traps (__trap(), a launch failure the caller sees as torch's
// device-side assert) and never reads outside the input.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"
#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

using ir::DType;
using ir::Shape;
using layout::coord;
using layout::empty_kernel;
using layout::gather_kernel;
using layout::Index;
using layout::index_for;
using layout::memcpy_kernel;
using layout::merge_pad_dims;
using layout::MergedPadDims;
using layout::norm_dim;
using layout::prod;

// Statements that read index element `at` of input 1 into the int64_t `k`, trapping unless
// 0 <= k < size.
std::string checked_index(const std::string& at, int64_t size) {
  return "    const int64_t k = (int64_t)in1[" + at + "];\n" + "    if (k < 0 || k >= " + std::to_string(size) +
         "LL) __trap();  // torch raises on an out-of-range index\n";
}

KernelSource emit_embedding(const EmitContext& ctx) {
  // weight (V, D); out = index.shape + (D): row index[m] of the weight per D output elements.
  const Shape& w = ctx.in_type(0).shape;
  const int64_t V = w[0], D = w[1];
  const int64_t total = ctx.out_type().numel();
  Index ix = index_for(std::max(total, ctx.in_type(0).numel()));
  std::ostringstream body;
  body << checked_index(D == 1 ? "i" : "i / " + ix.lit(D), V) << "    out[i] = in0[(" << ix.type() << ")k * "
       << ix.lit(D) << (D == 1 ? "" : " + i % " + ix.lit(D)) << "];\n";
  return gather_kernel(ctx, ix, body.str(),
                       "embedding: " + std::to_string(total / std::max<int64_t>(D, 1)) + " rows of " +
                           std::to_string(D) + " from a table of " + std::to_string(V));
}

KernelSource emit_index_select(const EmitContext& ctx) {
  // x viewed as (outer, n, inner): out (outer, L, inner) with out[o, j, r] = x[o, index[j], r].
  const Shape& in = ctx.in_type(0).shape;
  const size_t d = static_cast<size_t>(norm_dim(ctx.node().attrs.i("dim"), in.size()));
  const int64_t n = in.empty() ? 1 : in[d];
  const int64_t outer = prod(in, 0, d), inner = prod(in, d + 1);
  const int64_t L = ctx.in_type(1).numel();
  const int64_t total = ctx.out_type().numel();
  Index ix = index_for(std::max(total, ctx.in_type(0).numel()));
  std::ostringstream body;
  const std::string j = inner == 1 ? "i % " + ix.lit(L) : "(i / " + ix.lit(inner) + ") % " + ix.lit(L);
  body << checked_index(j, n) << "    out[i] = in0[";
  if (outer != 1) body << "(i / " << ix.lit(L * inner) << ") * " << ix.lit(n * inner) << " + ";
  body << "(" << ix.type() << ")k" << (inner == 1 ? "" : " * " + ix.lit(inner) + " + i % " + ix.lit(inner)) << "];\n";
  return gather_kernel(ctx, ix, body.str(),
                       "index_select of " + std::to_string(L) + " along dim " + std::to_string(d) + " (outer " +
                           std::to_string(outer) + ", size " + std::to_string(n) + ", inner " + std::to_string(inner) +
                           ")");
}

KernelSource emit_gather(const EmitContext& ctx) {
  // out[c] = x[c with c[dim] = index[c]]; index has out's shape, so its offset is i.
  const Shape& in = ctx.in_type(0).shape;
  const Shape& out = ctx.out_type().shape;
  const size_t d = static_cast<size_t>(norm_dim(ctx.node().attrs.i("dim"), in.size()));
  const int64_t n = in.empty() ? 1 : in[d];
  const int64_t total = ctx.out_type().numel();
  Index ix = index_for(std::max(total, ctx.in_type(0).numel()));
  std::ostringstream body;
  body << checked_index("i", n);
  if (in.size() <= 1) {
    body << "    out[i] = in0[(" << ix.type() << ")k];\n";
    return gather_kernel(ctx, ix, body.str(), "gather along the only dim (size " + std::to_string(n) + ")");
  }
  bool same_outside = true;  // index matches x in every dim but `d`: x as (outer, n, inner)
  for (size_t k = 0; k < in.size(); ++k) same_outside = same_outside && (k == d || in[k] == out[k]);
  if (same_outside) {
    const int64_t inner = prod(in, d + 1), L = out[d];
    body << "    out[i] = in0[";
    if (prod(in, 0, d) != 1) body << "(i / " << ix.lit(L * inner) << ") * " << ix.lit(n * inner) << " + ";
    body << "(" << ix.type() << ")k" << (inner == 1 ? "" : " * " + ix.lit(inner) + " + i % " + ix.lit(inner)) << "];\n";
    return gather_kernel(ctx, ix, body.str(),
                         "gather along dim " + std::to_string(d) + " of " + ir::shape_str(in) + ", index " +
                             ir::shape_str(out) + " (x as outer, " + std::to_string(n) + ", " + std::to_string(inner) +
                             ")");
  }
  // The index is smaller than x outside `d`: every coordinate of the output, x's strides.
  const auto strides = contiguous_strides(in);
  body << "    const " << ix.type() << " src = ";
  for (size_t k = 0; k < out.size(); ++k) {
    const std::string c = k == d ? "(" + ix.type() + ")k" : coord(ix, out, k, "i");
    body << (k ? " + " : "") << c;
    if (strides[k] != 1) body << " * " << ix.lit(strides[k]);
  }
  body << ";\n    out[i] = in0[src];\n";
  return gather_kernel(
      ctx, ix, body.str(),
      "gather along dim " + std::to_string(d) + " of " + ir::shape_str(in) + ", index " + ir::shape_str(out));
}

KernelSource emit_one_hot(const EmitContext& ctx) {
  // out (index.shape, C): out[m, c] = index[m] == c; each index element is checked once per class.
  const int64_t C = ctx.out_type().shape.back();
  const int64_t total = ctx.out_type().numel();
  Index ix = index_for(total);
  std::ostringstream body;
  body << "    const int64_t k = (int64_t)in0[" << (C == 1 ? "i" : "i / " + ix.lit(C)) << "];\n"
       << "    if (k < 0 || k >= " << C << "LL) __trap();  // torch raises on a class outside [0, num_classes)\n"
       << "    out[i] = k == (int64_t)(" << (C == 1 ? "0" : "i % " + ix.lit(C)) << ") ? 1 : 0;\n";
  return gather_kernel(ctx, ix, body.str(),
                       "one_hot of " + std::to_string(total / C) + " indices, " + std::to_string(C) + " classes");
}

// `value` as a C expression of dtype `t` (the pad value; torch casts it to the tensor's dtype).
StatusOr<std::string> value_of(double value, DType t) {
  switch (t) {
    case DType::kFloat64: return double_literal(value);
    case DType::kFloat32: return float_literal(value);
    case DType::kFloat16: return "__float2half(" + float_literal(value) + ")";
    case DType::kBFloat16: return "__float2bfloat16(" + float_literal(value) + ")";
    case DType::kBool: return std::string(value != 0 ? "true" : "false");
    default:
      if (!std::isfinite(value))
        return invalid_argument("a non-finite pad value does not fit the integer dtype " +
                                std::string(ir::dtype_name(t)));
      return "((" + ctype(t) + ")" + std::to_string(static_cast<int64_t>(value)) + "LL)";
  }
}

}  // namespace

StatusOr<KernelSource> emit_Index(const EmitContext& ctx) {
  if (ctx.out_type().numel() == 0) return empty_kernel(ctx);
  switch (ctx.node().op) {
    case ir::OpId::kEmbedding: return emit_embedding(ctx);
    case ir::OpId::kIndexSelect: return emit_index_select(ctx);
    case ir::OpId::kGather: return emit_gather(ctx);
    case ir::OpId::kOneHot: return emit_one_hot(ctx);
    case ir::OpId::kEmbeddingBag: return emit_embedding_bag(ctx);
    default: return internal_error("emit_Index: " + ir::describe(ctx.graph, ctx.node()) + " is not an index op");
  }
}

StatusOr<KernelSource> emit_Unfold(const EmitContext& ctx) {
  // x as (outer, n, inner); out (outer, W, inner, S): out[o, w, r, s] = x[o, w * step + s, r].
  const Shape& in = ctx.in_type(0).shape;
  const ir::Attrs& a = ctx.node().attrs;
  const size_t d = static_cast<size_t>(norm_dim(a.i("dim"), in.size()));
  const int64_t n = in[d], S = a.i("size"), step = a.i("step");
  const int64_t W = ctx.out_type().shape[d];
  const int64_t outer = prod(in, 0, d), inner = prod(in, d + 1);
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  Index ix = index_for(std::max(total, ctx.in_type(0).numel()));
  std::ostringstream body;
  body << "    const " << ix.type() << " s = i % " << ix.lit(S) << ", q = i / " << ix.lit(S) << ";\n"
       << "    const " << ix.type() << " w = " << (inner == 1 ? "q" : "q / " + ix.lit(inner)) << " % " << ix.lit(W)
       << ";\n"
       << "    out[i] = in0[";
  if (outer != 1) body << "q / " << ix.lit(W * inner) << " * " << ix.lit(n * inner) << " + ";
  body << "(w * " << ix.lit(step) << " + s)" << (inner == 1 ? "" : " * " + ix.lit(inner) + " + q % " + ix.lit(inner))
       << "];\n";
  return gather_kernel(ctx, ix, body.str(),
                       "unfold dim " + std::to_string(d) + " of size " + std::to_string(n) + " into " +
                           std::to_string(W) + " windows of " + std::to_string(S) + " step " + std::to_string(step) +
                           " (outer " + std::to_string(outer) + ", inner " + std::to_string(inner) + ")");
}

StatusOr<KernelSource> emit_Pad(const EmitContext& ctx) {
  if (ctx.node().op != ir::OpId::kConstantPad) return emit_mode_pad(ctx);
  const Shape& in = ctx.in_type(0).shape;
  const Shape& out = ctx.out_type().shape;
  const auto& pad = ctx.node().attrs.ints("pad");
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  // Per dim, the pad before it (negative: cropped); runs of unpadded dims merge into one.
  const MergedPadDims m = merge_pad_dims(in, out, pad);
  if (!m.any_padded()) return memcpy_kernel(ctx, 0, 0, total);
  KF_ASSIGN_OR_RETURN(std::string value, value_of(ctx.node().attrs.f("value"), ctx.out_type().dtype));
  Index ix = index_for(std::max(total, ctx.in_type(0).numel()));
  const auto strides = contiguous_strides(m.in);
  // Coordinates in 64 bits: a negative pad makes the source coordinate exceed the output's.
  std::ostringstream body, inside;
  body << "    int64_t src = 0;\n";
  for (size_t k = 0; k < m.out.size(); ++k) {
    const std::string c = "c" + std::to_string(k);
    body << "    const int64_t " << c << " = (int64_t)" << coord(ix, m.out, k, "i");
    if (m.before[k] != 0) body << " - " << m.before[k] << "LL";
    body << ";\n";
    if (m.padded[k]) inside << (inside.tellp() > 0 ? " && " : "") << c << " >= 0 && " << c << " < " << m.in[k] << "LL";
    body << "    src += " << c;
    if (strides[k] != 1) body << " * " << strides[k] << "LL";
    body << ";\n";
  }
  body << "    out[i] = (" << inside.str() << ") ? in0[src] : " << value << ";\n";
  return gather_kernel(ctx, ix, body.str(),
                       "constant pad " + ir::shape_str(pad) + " of " + ir::shape_str(in) + " over merged dims " +
                           ir::shape_str(m.in) + " -> " + ir::shape_str(m.out));
}

}  // namespace kforge::codegen
