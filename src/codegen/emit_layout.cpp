// Layout and data-movement families (reshape copy, permute, expand, slice, select, flip, cat/stack,
// diag, tril/triu): gather kernels. Each thread takes output elements in a grid-stride loop and
// computes the input offset of each by index arithmetic with the shapes baked in (dims merged
// where the op allows, so the arithmetic stays short). Copies that are one contiguous block become
// cudaMemcpyAsync; a permute that moves the innermost dim goes through 32x32 shared-memory tiles so
// that reads and writes are both coalesced. Values are copied bit for bit; cat/stack of mixed
// dtypes converts each element to the promoted output type.
#include <algorithm>
#include <climits>
#include <numeric>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"
#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

using ir::DType;
using ir::Shape;

using layout::convert;
using layout::coord;
using layout::empty_kernel;
using layout::gather_kernel;
using layout::half_headers;
using layout::Index;
using layout::index_for;
using layout::memcpy_kernel;
using layout::norm_dim;
using layout::prod;
using layout::zero_of;

// ---- permute ----

// A permutation reduced to its essentials: size-1 dims dropped, runs of dims that stay adjacent
// merged. in_shape is in input order; perm[k] is the input group at output position k.
struct MergedPerm {
  Shape in_shape;
  std::vector<size_t> perm;
  Shape out_shape() const {
    Shape s;
    for (auto p : perm) s.push_back(in_shape[p]);
    return s;
  }
  bool identity() const {
    for (size_t k = 0; k < perm.size(); ++k) {
      if (perm[k] != k) return false;
    }
    return true;
  }
};

MergedPerm merge_perm(const Shape& in, const std::vector<int64_t>& dims) {
  // Renumber the input dims of size > 1.
  std::vector<int> renum(in.size(), -1);
  Shape kept;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) {
      renum[d] = static_cast<int>(kept.size());
      kept.push_back(in[d]);
    }
  }
  std::vector<size_t> p;  // kept input dims in output order
  for (auto d : dims) {
    int r = renum[static_cast<size_t>(norm_dim(d, in.size()))];
    if (r >= 0) p.push_back(static_cast<size_t>(r));
  }
  // Groups of consecutive output positions whose input dims are consecutive.
  std::vector<std::pair<size_t, size_t>> groups;  // [first, last] input dim
  for (size_t k = 0; k < p.size(); ++k) {
    if (k > 0 && p[k] == groups.back().second + 1) {
      groups.back().second = p[k];
    } else {
      groups.push_back({p[k], p[k]});
    }
  }
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  MergedPerm m;
  std::vector<size_t> input_pos(groups.size());
  for (size_t j = 0; j < order.size(); ++j) {
    const auto& g = groups[order[j]];
    m.in_shape.push_back(prod(kept, g.first, g.second + 1));
    input_pos[order[j]] = j;
  }
  for (size_t k = 0; k < groups.size(); ++k) m.perm.push_back(input_pos[k]);
  return m;
}

// out[..] with input offset sum_k c_k * in_stride[perm[k]] over the merged output coordinates.
KernelSource permute_gather(const EmitContext& ctx, const MergedPerm& m) {
  Index ix = index_for(ctx.out_type().numel());
  Shape out = m.out_shape();
  auto in_strides = contiguous_strides(m.in_shape);
  std::ostringstream body;
  body << "    const " << ix.type() << " src = ";
  for (size_t k = 0; k < out.size(); ++k) {
    body << (k ? " + " : "") << coord(ix, out, k, "i");
    if (in_strides[m.perm[k]] != 1) body << " * " << ix.lit(in_strides[m.perm[k]]);
  }
  body << ";\n    out[i] = in0[src];\n";
  return gather_kernel(
      ctx, ix, body.str(),
      "permute as a gather over merged dims: input " + ir::shape_str(m.in_shape) + ", output " + ir::shape_str(out));
}

// Tiled transpose: the input's innermost group (A elements, stride 1 in the input) and the output's
// innermost group (B elements, stride 1 in the output) go through a 32x33 shared tile; the other
// groups (`rest`) index whole tiles.
KernelSource permute_tiled(const EmitContext& ctx, const MergedPerm& m) {
  const size_t q = m.perm.size();
  const size_t ga = q - 1;          // input group that is innermost in the input
  const size_t gb = m.perm[q - 1];  // input group that is innermost in the output
  Shape out = m.out_shape();
  auto in_strides = contiguous_strides(m.in_shape);
  auto out_strides = contiguous_strides(out);
  size_t pos_a = 0;  // output position of group ga
  for (size_t k = 0; k < q; ++k) {
    if (m.perm[k] == ga) pos_a = k;
  }
  const int64_t A = m.in_shape[ga];
  const int64_t B = m.in_shape[gb];
  const int64_t out_stride_a = out_strides[pos_a];
  const int64_t in_stride_b = in_strides[gb];
  // The rest groups, in output order, with their strides on both sides.
  Shape rest;
  std::vector<int64_t> rest_in, rest_out;
  for (size_t k = 0; k < q; ++k) {
    size_t g = m.perm[k];
    if (g == ga || g == gb) continue;
    rest.push_back(m.in_shape[g]);
    rest_in.push_back(in_strides[g]);
    rest_out.push_back(out_strides[k]);
  }
  const int64_t ta = (A + 31) / 32, tb = (B + 31) / 32;
  const int64_t tiles = ta * tb * prod(rest);
  Index ix = index_for(std::max(ctx.out_type().numel(), tiles * 1024));

  KernelSource src = begin_source(ctx, half_headers(ctx));
  std::string T = ctype(ctx.out_type().dtype);
  std::ostringstream os;
  os << "namespace {\n"
     << "// permute as tiled transpose: input " << ir::shape_str(m.in_shape) << ", output " << ir::shape_str(out)
     << "; tiles of 32 along the input's innermost (" << A << ") and the output's innermost (" << B << ") dims\n"
     << "__global__ void __launch_bounds__(256) " << ctx.kernel.name << "_kernel(const " << T << "* __restrict__ in0, "
     << T << "* __restrict__ out) {\n"
     << "  typedef " << ix.type() << " I;\n"
     << "  __shared__ " << T << " tile[32][33];\n"
     << "  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;\n"
     << "  for (I t = blockIdx.x; t < " << ix.lit(tiles) << "; t += gridDim.x) {\n"
     << "    const I ta = t % " << ix.lit(ta) << ";\n"
     << "    const I tb = (t / " << ix.lit(ta) << ") % " << ix.lit(tb) << ";\n"
     << "    const I r = t / " << ix.lit(ta * tb) << ";\n"
     << "    I in_base = 0, out_base = 0;\n";
  for (size_t j = 0; j < rest.size(); ++j) {
    std::string c = coord(ix, rest, j, "r");
    os << "    { const I c = " << c << "; in_base += c * " << ix.lit(rest_in[j]) << "; out_base += c * "
       << ix.lit(rest_out[j]) << "; }\n";
  }
  os << "    (void)r;\n"
     << "    const I a0 = ta * 32, b0 = tb * 32;\n"
     << "    #pragma unroll\n"
     << "    for (int j = ty; j < 32; j += 8) {\n"
     << "      const I a = a0 + tx, b = b0 + j;\n"
     << "      if (a < " << ix.lit(A) << " && b < " << ix.lit(B) << ") tile[j][tx] = in0[in_base + b * "
     << ix.lit(in_stride_b) << " + a];\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    #pragma unroll\n"
     << "    for (int j = ty; j < 32; j += 8) {\n"
     << "      const I b = b0 + tx, a = a0 + j;\n"
     << "      if (a < " << ix.lit(A) << " && b < " << ix.lit(B) << ") out[out_base + a * " << ix.lit(out_stride_a)
     << " + b] = tile[tx][j];\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  const int64_t tiles = " << tiles << "LL;\n"
     << "  const unsigned int grid = (unsigned int)(tiles < 132LL * 16 ? tiles : 132LL * 16);\n"
     << "  " << ctx.kernel.name << "_kernel<<<grid, 256, 0, ctx->stream>>>(" << ctx.in_ptr(0) << ", " << ctx.out_ptr()
     << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  return src;
}

// ---- cat / stack ----

struct CatPiece {
  size_t input;
  int64_t row_begin;  // first element of this input within one output row
  int64_t row_len;    // its elements per output row
};

}  // namespace

StatusOr<KernelSource> emit_Reshape(const EmitContext& ctx) {
  // Contiguous data: a reshape that must own its buffer (a graph output) is a plain copy.
  return memcpy_kernel(ctx, 0, 0, ctx.out_type().numel());
}

StatusOr<KernelSource> emit_Permute(const EmitContext& ctx) {
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  MergedPerm m = merge_perm(ctx.in_type(0).shape, ctx.node().attrs.ints("dims"));
  if (m.identity()) return memcpy_kernel(ctx, 0, 0, n);
  const size_t q = m.perm.size();
  // The innermost dim moves: tile when both innermost extents are long enough to matter.
  if (m.perm[q - 1] != q - 1 && m.in_shape[q - 1] >= 8 && m.in_shape[m.perm[q - 1]] >= 8) return permute_tiled(ctx, m);
  return permute_gather(ctx, m);
}

StatusOr<KernelSource> emit_Expand(const EmitContext& ctx) {
  const Shape& in = ctx.in_type(0).shape;
  const Shape& out = ctx.out_type().shape;
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  if (ctx.in_type(0).numel() == n) return memcpy_kernel(ctx, 0, 0, n);
  // Merge runs of output dims that are all broadcast or all kept (the input's size-1 dims are the
  // broadcast ones; leading new dims are broadcast too).
  size_t lead = out.size() - in.size();
  Shape mo, mi;   // merged output shape and matching input shape (1 where broadcast)
  int last = -1;  // 0 broadcast, 1 kept
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    int kind = (d < lead || in[d - lead] == 1) ? 0 : 1;
    if (kind == last) {
      mo.back() *= out[d];
      if (kind == 1) mi.back() *= out[d];
    } else {
      mo.push_back(out[d]);
      mi.push_back(kind == 1 ? out[d] : 1);
      last = kind;
    }
  }
  Index ix = index_for(n);
  auto in_strides = contiguous_strides(mi);
  std::string off;
  for (size_t k = 0; k < mo.size(); ++k) {
    if (mi[k] == 1) continue;
    off += (off.empty() ? "" : " + ") + coord(ix, mo, k, "i");
    if (in_strides[k] != 1) off += " * " + ix.lit(in_strides[k]);
  }
  if (off.empty()) off = ix.lit(0);
  return gather_kernel(
      ctx, ix, "    out[i] = in0[" + off + "];\n",
      "expand as a broadcast gather: merged input " + ir::shape_str(mi) + " over " + ir::shape_str(mo));
}

StatusOr<KernelSource> emit_Slice(const EmitContext& ctx) {
  const ir::Attrs& a = ctx.node().attrs;
  const Shape& in = ctx.in_type(0).shape;
  size_t d = static_cast<size_t>(norm_dim(a.i("dim"), in.size()));
  int64_t n = in[d];
  int64_t start = a.i("start") < 0 ? a.i("start") + n : a.i("start");
  start = std::clamp<int64_t>(start, 0, n);
  int64_t step = a.i("step");
  if (step <= 0) return invalid_argument("slice step must be positive");
  int64_t len = ctx.out_type().shape[d];
  int64_t outer = prod(in, 0, d), inner = prod(in, d + 1);
  int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  if (outer == 1 && (step == 1 || len == 1)) return memcpy_kernel(ctx, 0, start * inner, total);
  if (len == n) return memcpy_kernel(ctx, 0, 0, total);
  Index ix = index_for(ctx.in_type(0).numel());
  std::ostringstream body;
  // i = (o * len + j) * inner + r  ->  src = o * n * inner + (start + j * step) * inner + r
  std::string o = "(i / " + ix.lit(len * inner) + ")";
  std::string j = inner == 1 ? "(i % " + ix.lit(len) + ")" : "((i / " + ix.lit(inner) + ") % " + ix.lit(len) + ")";
  if (outer == 1) o = "0";
  body << "    const " << ix.type() << " src = " << o << " * " << ix.lit(n * inner) << " + (" << ix.lit(start) << " + "
       << j << " * " << ix.lit(step) << ") * " << ix.lit(inner);
  if (inner != 1) body << " + i % " << ix.lit(inner);
  body << ";\n    out[i] = in0[src];\n";
  return gather_kernel(ctx, ix, body.str(),
                       "slice of dim " + std::to_string(d) + ": " + std::to_string(len) + " of " + std::to_string(n) +
                           " from " + std::to_string(start) + " step " + std::to_string(step) + " (outer " +
                           std::to_string(outer) + ", inner " + std::to_string(inner) + ")");
}

StatusOr<KernelSource> emit_Select(const EmitContext& ctx) {
  const ir::Attrs& a = ctx.node().attrs;
  const Shape& in = ctx.in_type(0).shape;
  size_t d = static_cast<size_t>(norm_dim(a.i("dim"), in.size()));
  int64_t n = in[d];
  int64_t idx = a.i("index") < 0 ? a.i("index") + n : a.i("index");
  if (idx < 0 || idx >= n) return invalid_argument("select index out of range");
  int64_t outer = prod(in, 0, d), inner = prod(in, d + 1);
  int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  if (outer == 1) return memcpy_kernel(ctx, 0, idx * inner, total);
  Index ix = index_for(ctx.in_type(0).numel());
  std::ostringstream body;
  body << "    const " << ix.type() << " src = " << (inner == 1 ? "i" : "(i / " + ix.lit(inner) + ")") << " * "
       << ix.lit(n * inner) << " + " << ix.lit(idx * inner);
  if (inner != 1) body << " + i % " << ix.lit(inner);
  body << ";\n    out[i] = in0[src];\n";
  return gather_kernel(ctx, ix, body.str(),
                       "select index " + std::to_string(idx) + " of dim " + std::to_string(d) + " (outer " +
                           std::to_string(outer) + ", size " + std::to_string(n) + ", inner " + std::to_string(inner) +
                           ")");
}

StatusOr<KernelSource> emit_Flip(const EmitContext& ctx) {
  const Shape& in = ctx.in_type(0).shape;
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  std::vector<bool> flipped(in.size(), false);
  for (auto d : ctx.node().attrs.ints("dims")) flipped[static_cast<size_t>(norm_dim(d, in.size()))] = true;
  // Merge runs of dims with the same flip status: reversing every dim of a run reverses the run's
  // linear index.
  Shape ms;
  std::vector<bool> mf;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!ms.empty() && mf.back() == flipped[d]) {
      ms.back() *= in[d];
    } else {
      ms.push_back(in[d]);
      mf.push_back(flipped[d]);
    }
  }
  bool any = std::find(mf.begin(), mf.end(), true) != mf.end();
  if (!any) return memcpy_kernel(ctx, 0, 0, n);
  Index ix = index_for(n);
  auto strides = contiguous_strides(ms);
  std::ostringstream body;
  body << "    const " << ix.type() << " src = ";
  for (size_t k = 0; k < ms.size(); ++k) {
    std::string c = coord(ix, ms, k, "i");
    if (mf[k]) c = "(" + ix.lit(ms[k] - 1) + " - " + c + ")";
    body << (k ? " + " : "") << c;
    if (strides[k] != 1) body << " * " << ix.lit(strides[k]);
  }
  body << ";\n    out[i] = in0[src];\n";
  return gather_kernel(ctx, ix, body.str(), "flip over merged dims " + ir::shape_str(ms));
}

StatusOr<KernelSource> emit_Cat(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const Shape& out = ctx.out_type().shape;
  bool stack = node.op == ir::OpId::kStack;
  size_t d = static_cast<size_t>(norm_dim(node.attrs.i("dim"), out.size()));
  int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  // Every output row (the elements under one index of the dims before `d`) is the inputs' rows
  // one after another; an input's row has row_len elements.
  int64_t outer = prod(out, 0, d);
  int64_t row = total / outer;
  std::vector<CatPiece> pieces;
  int64_t at = 0;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    int64_t len = stack ? ctx.in_type(k).numel() / outer : prod(ctx.in_type(k).shape, d);
    if (len == 0) continue;
    pieces.push_back({k, at, len});
    at += len;
  }
  if (at != row) return internal_error("cat: input rows do not add up to the output row");
  Index ix = index_for(total);
  DType ot = ctx.out_type().dtype;
  std::ostringstream body;
  body << "    const " << ix.type() << " o = " << (outer == 1 ? ix.lit(0) : "i / " + ix.lit(row)) << ";\n"
       << "    const " << ix.type() << " p = " << (outer == 1 ? "i" : "i % " + ix.lit(row)) << ";\n";
  for (size_t j = 0; j < pieces.size(); ++j) {
    const CatPiece& pc = pieces[j];
    std::string load =
        "in" + std::to_string(pc.input) + "[o * " + ix.lit(pc.row_len) + " + (p - " + ix.lit(pc.row_begin) + ")]";
    body << "    " << (j ? "else " : "");
    if (j + 1 < pieces.size()) body << "if (p < " << ix.lit(pc.row_begin + pc.row_len) << ") ";
    body << "out[i] = " << convert(load, ctx.in_type(pc.input).dtype, ot) << ";\n";
  }
  body << "    (void)o;\n";
  return gather_kernel(ctx, ix, body.str(),
                       std::string(stack ? "stack" : "cat") + " of " + std::to_string(node.inputs.size()) +
                           " tensors at dim " + std::to_string(d) + ": " + std::to_string(outer) + " rows of " +
                           std::to_string(row));
}

StatusOr<KernelSource> emit_Diag(const EmitContext& ctx) {
  const Shape& in = ctx.in_type(0).shape;
  int64_t k = ctx.node().attrs.i("diagonal");
  int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  DType t = ctx.out_type().dtype;
  if (in.size() == 1) {
    // out[r][c] = x[min(r, c)] on the diagonal c - r == k, else 0.
    int64_t m = ctx.out_type().shape[0];
    Index ix = index_for(total);
    std::ostringstream body;
    body << "    const " << ix.type() << " r = i / " << ix.lit(m) << ", c = i % " << ix.lit(m) << ";\n"
         << "    out[i] = (c - r == " << ix.lit(k) << ") ? in0[" << (k >= 0 ? "r" : "c") << "] : " << zero_of(t)
         << ";\n";
    return gather_kernel(ctx, ix, body.str(),
                         "diag of a vector into a " + std::to_string(m) + "x" + std::to_string(m) + " matrix, offset " +
                             std::to_string(k));
  }
  // 2-D: out[j] = x[j][j + k] (k >= 0) or x[j - k][j] (k < 0).
  int64_t cols = in[1];
  Index ix = index_for(ctx.in_type(0).numel());
  int64_t base = k >= 0 ? k : -k * cols;
  std::ostringstream body;
  body << "    out[i] = in0[i * " << ix.lit(cols + 1) << " + " << ix.lit(base) << "];\n";
  return gather_kernel(ctx, ix, body.str(), "diagonal " + std::to_string(k) + " of a matrix " + ir::shape_str(in));
}

StatusOr<KernelSource> emit_Triangle(const EmitContext& ctx) {
  const Shape& s = ctx.in_type(0).shape;
  int64_t k = ctx.node().attrs.i("diagonal");
  int64_t total = ctx.out_type().numel();
  if (total == 0) return empty_kernel(ctx);
  bool lower = ctx.node().op == ir::OpId::kTril;
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  Index ix = index_for(total);
  // Compare in 64 bits: the diagonal offset may be any int.
  std::ostringstream body;
  body << "    const int64_t c = (int64_t)(i % " << ix.lit(cols) << ");\n"
       << "    const int64_t r = (int64_t)((i / " << ix.lit(cols) << ") % " << ix.lit(rows) << ");\n"
       << "    out[i] = (c - r " << (lower ? "<=" : ">=") << " " << k
       << "LL) ? in0[i] : " << zero_of(ctx.out_type().dtype) << ";\n";
  return gather_kernel(ctx, ix, body.str(),
                       std::string(lower ? "tril" : "triu") + " with diagonal " + std::to_string(k));
}

}  // namespace kforge::codegen
