// Scatter family (scatter, scatter_value, scatter_add, scatter_amax/amin/prod): the output starts as a copy
// of x (one device-to-device copy), then one thread per index element writes (or, for scatter_add, atomically
// adds; for amax/amin/prod, combines by a compare-and-swap loop) its element at the position the index names
// along dim. An index outside the dim traps (torch raises).
// With duplicate indices scatter writes one of the competing values (unspecified, as in torch);
// scatter_add sums them all, in an order that varies from run to run (floating-point rounding may differ
// in the last bits, as with torch's atomics on the GPU).
#include <limits>
#include <optional>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

// The scalar attr `value` as a C expression of dtype t (torch casts it to the tensor's dtype).
std::string scalar_of(const ir::AttrValue& v, ir::DType t) {
  const bool is_int = std::holds_alternative<int64_t>(v);
  const double d = is_int ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
  switch (t) {
    case ir::DType::kFloat64: return double_literal(d);
    case ir::DType::kFloat32: return float_literal(d);
    case ir::DType::kFloat16: return "__float2half(" + float_literal(d) + ")";
    case ir::DType::kBFloat16: return "__float2bfloat16(" + float_literal(d) + ")";
    case ir::DType::kBool: return d != 0 ? "true" : "false";
    default: {
      if (!is_int) return "((" + ctype(t) + ")" + double_literal(d) + ")";
      const int64_t i = std::get<int64_t>(v);
      // The lowest int64 (scatter_reduce amax's identity) has no literal: -9223372036854775808LL overflows.
      const std::string lit =
          i == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807LL - 1)" : std::to_string(i) + "LL";
      return "((" + ctype(t) + ")" + lit + ")";
    }
  }
}

// The atomic add of `v` at `p` for the dtypes the GPU adds atomically.
StatusOr<std::string> atomic_add(ir::DType t, const std::string& p, const std::string& v) {
  switch (t) {
    case ir::DType::kFloat32:
    case ir::DType::kFloat64:
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
    case ir::DType::kInt32: return "atomicAdd(" + p + ", " + v + ");";
    case ir::DType::kInt64:  // two's complement: the unsigned sum is the signed one
      return "atomicAdd((unsigned long long*)(" + p + "), (unsigned long long)(" + v + "));";
    default: return unsupported("scatter_add of " + std::string(ir::dtype_name(t)) + " (no atomic add of that type)");
  }
}

// scatter_amax / amin / prod: the combine of the value already there (a) with the arriving one (b), in float for
// the half types; a NaN wins max and min (as torch.maximum and torch.minimum).
std::optional<std::string> combine_of(ir::OpId op) {
  switch (op) {
    case ir::OpId::kScatterAmax: return "(a > b || a != a) ? a : b";
    case ir::OpId::kScatterAmin: return "(a < b || a != a) ? a : b";
    case ir::OpId::kScatterProd: return "a * b";
    default: return std::nullopt;
  }
}

// A device function kf_combine(T* p, T v) that applies `combine` atomically at p: a compare-and-swap loop on
// the element's bits (16-bit words need sm_70, which every target kforge builds for has).
StatusOr<std::string> atomic_combine_fn(ir::DType t, const std::string& combine, const std::string& op_name) {
  const std::string T = ctype(t);
  std::string word, in_float, out_of_float;
  switch (t) {
    case ir::DType::kFloat32:
    case ir::DType::kInt32: word = "unsigned int"; break;
    case ir::DType::kFloat64:
    case ir::DType::kInt64: word = "unsigned long long"; break;
    case ir::DType::kFloat16:
      word = "unsigned short";
      in_float = "__half2float";
      out_of_float = "__float2half";
      break;
    case ir::DType::kBFloat16:
      word = "unsigned short";
      in_float = "__bfloat162float";
      out_of_float = "__float2bfloat16";
      break;
    default:
      return unsupported(op_name + " of " + std::string(ir::dtype_name(t)) +
                         " (no atomic compare-and-swap of that width); cast to float32 or int32 first");
  }
  std::ostringstream os;
  const std::string A = in_float.empty() ? T : "float";
  os << "__device__ __forceinline__ " << T << " kf_combine_values(" << T << " x, " << T << " y) {\n"
     << "  const " << A << " a = " << (in_float.empty() ? "x" : in_float + "(x)") << ";\n"
     << "  const " << A << " b = " << (in_float.empty() ? "y" : in_float + "(y)") << ";\n"
     << "  return " << (out_of_float.empty() ? "(" + combine + ")" : out_of_float + "(" + combine + ")") << ";\n"
     << "}\n"
     << "__device__ __forceinline__ void kf_combine(" << T << "* p, " << T << " v) {\n"
     << "  " << word << "* w = reinterpret_cast<" << word << "*>(p);\n"
     << "  " << word << " seen = *w, before;\n"
     << "  do {\n"
     << "    before = seen;\n"
     << "    " << T << " cur;\n"
     << "    memcpy(&cur, &before, sizeof(cur));\n"
     << "    const " << T << " next = kf_combine_values(cur, v);\n"
     << "    " << word << " want;\n"
     << "    memcpy(&want, &next, sizeof(want));\n"
     << "    if (want == before) return;  // nothing changes (also ends the loop on a NaN already there)\n"
     << "    seen = atomicCAS(w, before, want);\n"
     << "  } while (seen != before);\n"
     << "}\n";
  return os.str();
}

}  // namespace

StatusOr<KernelSource> emit_Scatter(const EmitContext& ctx) {
  using layout::coord;
  const ir::Node& node = ctx.node();
  const ir::TensorType& x = ctx.in_type(0);
  const ir::TensorType& index = ctx.in_type(1);
  const ir::DType t = x.dtype;
  const int64_t total = x.numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const ir::Shape xs = x.shape.empty() ? ir::Shape{1} : x.shape;
  const ir::Shape is = index.shape.empty() ? ir::Shape{1} : index.shape;
  const size_t d = static_cast<size_t>(layout::norm_dim(node.attrs.i("dim"), x.shape.size()));
  const int64_t count = index.numel();
  const bool has_src = node.op != ir::OpId::kScatterValue;
  const ir::Shape ss = has_src ? (ctx.in_type(2).shape.empty() ? ir::Shape{1} : ctx.in_type(2).shape) : ir::Shape{};
  const auto x_strides = contiguous_strides(xs);
  const auto s_strides = has_src ? contiguous_strides(ss) : std::vector<int64_t>{};
  std::ostringstream body;
  body << "    const int64_t k = (int64_t)idx[e];\n"
       << "    if (k < 0 || k >= " << xs[d] << "LL) __trap();  // torch raises on an out-of-range index\n"
       << "    int64_t dst = 0, from = 0;\n";
  const layout::Index wide{true};
  for (size_t c = 0; c < is.size(); ++c) {
    const std::string cc = "c" + std::to_string(c);
    body << "    const int64_t " << cc << " = " << coord(wide, is, c, "e") << ";\n";
    body << "    dst += " << (c == d ? "k" : cc) << " * " << x_strides[c] << "LL;\n";
    if (has_src) body << "    from += " << cc << " * " << s_strides[c] << "LL;\n";
  }
  body << "    (void)from;\n";
  std::string value = has_src ? "src[from]" : scalar_of(node.attrs.get("value"), t);
  const std::optional<std::string> combine = combine_of(node.op);
  std::string helpers;
  if (node.op == ir::OpId::kScatterAdd) {
    KF_ASSIGN_OR_RETURN(std::string add, atomic_add(t, "out + dst", value));
    body << "    " << add << "\n";
  } else if (combine) {
    KF_ASSIGN_OR_RETURN(helpers, atomic_combine_fn(t, *combine, std::string(ir::op_info(node.op).name)));
    body << "    kf_combine(out + dst, " << value << ");\n";
  } else {
    body << "    out[dst] = " << value << ";\n";
  }
  KernelSource src = begin_source(ctx, layout::half_headers(ctx));
  const std::string T = ctype(t);
  std::ostringstream os;
  os << "namespace {\n"
     << helpers << "// " << ir::op_info(node.op).name << " of " << count << " index elements "
     << ir::shape_str(index.shape) << " along dim " << d << " of " << ir::shape_str(x.shape) << "\n"
     << "__global__ void __launch_bounds__(256) " << ctx.kernel.name << "_kernel(const int64_t* __restrict__ idx, "
     << (has_src ? "const " + T + "* __restrict__ src, " : "") << T << "* __restrict__ out) {\n"
     << "  KF_GRID_STRIDE(e, " << count << "LL) {\n"
     << body.str() << "  }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  KF_CUDA(cudaMemcpyAsync(" << ctx.out_ptr() << ", " << ctx.in_ptr(0) << ", " << total << "ULL * sizeof(" << T
     << "), cudaMemcpyDeviceToDevice, ctx->stream));\n";
  if (count > 0) {
    os << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << count << "LL, 256), 256, 0, ctx->stream>>>("
       << ctx.in_ptr(1) << ", " << (has_src ? ctx.in_ptr(2) + ", " : "") << ctx.out_ptr() << ");\n"
       << "  KF_LAUNCHED();\n";
  }
  os << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  src.launches = count > 0 ? 2 : 1;
  return src;
}

}  // namespace kforge::codegen
