// Gather kernels of the layout and indexing families (gather_kernel.h).
#include "codegen/gather_kernel.h"

#include <algorithm>
#include <sstream>

namespace kforge::codegen::layout {

using ir::DType;
using ir::Shape;

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < std::min(to, s.size()); ++d) p *= s[d];
  return p;
}

int64_t norm_dim(int64_t d, size_t rank) {
  int64_t r = static_cast<int64_t>(std::max<size_t>(rank, 1));
  return d < 0 ? d + r : d;
}

bool is_half(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16;
}

Index index_for(int64_t max_elems) {
  return Index{max_elems >= static_cast<int64_t>(INT_MAX) / 2};
}

std::string half_headers(const EmitContext& ctx) {
  bool half = is_half(ctx.out_type().dtype);
  for (auto v : ctx.node().inputs) half = half || (v != ir::kNoValue && is_half(ctx.graph.type(v).dtype));
  return half ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "";
}

// C expression converting `e` of dtype `from` to dtype `to` the way torch's .to() does.
std::string convert(const std::string& e, DType from, DType to) {
  if (from == to) return e;
  std::string v = e;
  if (is_half(from)) v = "((float)(" + e + "))";
  if (to == DType::kBool) return "((" + v + ") != 0)";
  if (to == DType::kFloat16) return "__float2half((float)(" + v + "))";
  if (to == DType::kBFloat16) return "__float2bfloat16((float)(" + v + "))";
  return "((" + ctype(to) + ")(" + v + "))";
}

std::string zero_of(DType t) {
  switch (t) {
    case DType::kFloat16: return "__float2half(0.0f)";
    case DType::kBFloat16: return "__float2bfloat16(0.0f)";
    case DType::kBool: return "false";
    default: return "((" + ctype(t) + ")0)";
  }
}

KernelSource empty_kernel(const EmitContext& ctx) {
  KernelSource src = begin_source(ctx);
  src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

// out[0 .. bytes) = in[offset elements ..] as one device-to-device copy on the stream.
KernelSource memcpy_kernel(const EmitContext& ctx, size_t in_index, int64_t elem_offset, int64_t elems) {
  if (elems == 0) return empty_kernel(ctx);
  KernelSource src = begin_source(ctx, half_headers(ctx));
  std::ostringstream os;
  os << ctx.signature() << " {\n"
     << "  // one contiguous block: " << elems << " elements from element " << elem_offset << " of the input\n"
     << "  KF_CUDA(cudaMemcpyAsync(" << ctx.out_ptr() << ", " << ctx.in_ptr(in_index) << " + " << elem_offset << "LL, "
     << elems << "ULL * sizeof(" << ctype(ctx.out_type().dtype) << "), cudaMemcpyDeviceToDevice, ctx->stream));\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  return src;
}

// A grid-stride gather kernel over the n output elements: `body` assigns out[i] from the kernel
// parameters in0.. (the node's inputs, typed), with `i` the output index of type Index.
KernelSource gather_kernel(const EmitContext& ctx, const Index& ix, const std::string& body,
                           const std::string& comment) {
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  KernelSource src = begin_source(ctx, half_headers(ctx));
  int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  std::string out_t = ctype(ctx.out_type().dtype);
  std::ostringstream params, args;
  for (size_t k = 0; k < ctx.node().inputs.size(); ++k) {
    if (!ctx.has_input(k)) continue;  // an absent optional input (embedding_bag's offsets)
    params << "const " << ctype(ctx.in_type(k).dtype) << "* __restrict__ in" << k << ", ";
    args << ctx.in_ptr(k) << ", ";
  }
  std::ostringstream os;
  os << "namespace {\n"
     << "// " << comment << "\n"
     << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(" << params.str() << out_t
     << "* __restrict__ out) {\n"
     << "  KF_GRID_STRIDE(i_, " << n << "LL) {\n"
     << "    const " << ix.type() << " i = (" << ix.type() << ")i_;\n"
     << body << "  }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << n << "LL, " << block << "), " << block
     << ", 0, ctx->stream>>>(" << args.str() << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  return src;
}

// Coordinate `k` of linear index `i` over `shape` (row-major): "((i / stride) % size)" with the
// trivial parts left out.
std::string coord(const Index& ix, const Shape& shape, size_t k, const std::string& i) {
  int64_t stride = prod(shape, k + 1);
  std::string e = stride == 1 ? i : "(" + i + " / " + ix.lit(stride) + ")";
  if (k > 0) e = "(" + e + " % " + ix.lit(shape[k]) + ")";
  return e;
}

bool MergedPadDims::any_padded() const {
  return std::find(padded.begin(), padded.end(), true) != padded.end();
}

MergedPadDims merge_pad_dims(const ir::Shape& in, const ir::Shape& out, const std::vector<int64_t>& pad) {
  std::vector<int64_t> before(in.size(), 0);
  std::vector<bool> padded(in.size(), false);
  for (size_t j = 0; j < pad.size() / 2; ++j) {
    const size_t dim = in.size() - 1 - j;
    before[dim] = pad[2 * j];
    padded[dim] = pad[2 * j] != 0 || pad[2 * j + 1] != 0;
  }
  MergedPadDims m;
  for (size_t dim = 0; dim < in.size(); ++dim) {
    if (!padded[dim] && !m.out.empty() && !m.padded.back()) {
      m.out.back() *= out[dim];
      m.in.back() *= in[dim];
      continue;
    }
    m.out.push_back(out[dim]);
    m.in.push_back(in[dim]);
    m.before.push_back(before[dim]);
    m.padded.push_back(padded[dim]);
  }
  return m;
}

}  // namespace kforge::codegen::layout
