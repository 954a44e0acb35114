// Elementwise families (unary, binary, where, cast, full): one grid-stride kernel per op, shapes
// baked in, broadcasting by index arithmetic, math in float (double for float64 tensors).
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"

namespace kforge::codegen {

namespace {

struct ElementwiseRule {
  ir::OpId op;
  const char* when;
  const char* expr;
};

constexpr ElementwiseRule kUnaryRules[] = {
#define KF_UNARY(id, when, expr) {ir::OpId::k##id, when, expr},
#define KF_BINARY(id, expr)
#include "ir/elementwise_ops.def"
#undef KF_UNARY
#undef KF_BINARY
};

constexpr ElementwiseRule kBinaryRules[] = {
#define KF_UNARY(id, when, expr)
#define KF_BINARY(id, expr) {ir::OpId::k##id, "", expr},
#include "ir/elementwise_ops.def"
#undef KF_UNARY
#undef KF_BINARY
};

std::string attr_text(const ir::AttrValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << *d;
    return os.str();
  }
  return "null";
}

bool rule_applies(const ElementwiseRule& r, const ir::Node& node) {
  std::string when = r.when;
  if (when.empty()) return true;
  auto eq = when.find('=');
  std::string name = when.substr(0, eq);
  if (!node.attrs.has(name)) return false;
  std::string want = when.substr(eq + 1);
  const auto& v = node.attrs.get(name);
  if (auto* d = std::get_if<double>(&v)) return std::to_string(*d) == std::to_string(std::stod(want));
  return attr_text(v) == want;
}

// Replaces $attr with a literal of the compute type; a null attr becomes -inf for names that
// start with "min" and +inf otherwise (the open side of a clamp).
StatusOr<std::string> substitute(const std::string& expr, const ir::Node& node, const std::string& T) {
  std::string out;
  for (size_t i = 0; i < expr.size();) {
    if (expr[i] != '$') {
      out += expr[i++];
      continue;
    }
    size_t j = i + 1;
    while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
    std::string name = expr.substr(i + 1, j - i - 1);
    if (!node.attrs.has(name)) return internal_error("elementwise rule uses unknown attr $" + name);
    if (node.attrs.is_null(name)) {
      out += name.rfind("min", 0) == 0 ? "T(-INFINITY)" : "T(INFINITY)";
    } else {
      double v = node.attrs.f(name);
      out += T == "double" ? double_literal(v) : "T" + float_literal(v);
    }
    i = j;
  }
  return out;
}

// The type arithmetic happens in: float for 16-bit and 32-bit floats, double for float64, the
// tensor's own type for integers.
std::string compute_type(ir::DType t) {
  if (t == ir::DType::kFloat64) return "double";
  if (ir::is_floating(t)) return "float";
  if (t == ir::DType::kBool) return "int";
  return ctype(t);
}

std::string fp16_headers(const EmitContext& ctx) {
  bool half = false;
  for (auto v : ctx.node().inputs) {
    if (v == ir::kNoValue) continue;
    auto t = ctx.graph.type(v).dtype;
    half = half || t == ir::DType::kFloat16 || t == ir::DType::kBFloat16;
  }
  auto t = ctx.out_type().dtype;
  half = half || t == ir::DType::kFloat16 || t == ir::DType::kBFloat16;
  return half ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "";
}

// One grid-stride kernel: `body` computes `y` (of compute type T) from loads at offset `i`.
KernelSource elementwise_kernel(const EmitContext& ctx, const std::string& T, const std::string& body) {
  KernelSource src = begin_source(ctx, fp16_headers(ctx));
  int64_t n = ctx.out_type().numel();
  int block = static_cast<int>(ctx.kernel.knob("block", 256));
  std::string out_t = ctype(ctx.out_type().dtype);
  std::ostringstream os;
  os << "namespace {\n"
     << "typedef " << T << " T;\n"
     << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(";
  std::ostringstream params, args;
  for (size_t k = 0; k < ctx.node().inputs.size(); ++k) {
    if (!ctx.has_input(k)) continue;
    params << (params.tellp() > 0 ? ", " : "") << "const " << ctype(ctx.in_type(k).dtype) << "* __restrict__ in" << k;
    args << ctx.in_ptr(k) << ", ";
  }
  os << params.str() << (params.tellp() > 0 ? ", " : "") << out_t << "* __restrict__ out) {\n"
     << "  KF_GRID_STRIDE(i, " << n << "LL) {\n"
     << body << "    out[i] = (" << out_t << ")y;\n"
     << "  }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << n << "LL, " << block << "), " << block
     << ", 0, ctx->stream>>>(" << args.str() << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  if (n == 0) {
    src.code = begin_source(ctx).code + ctx.signature() + " { return 0; }\n";
    src.launches = 0;
  }
  return src;
}

std::string load(const EmitContext& ctx, size_t k, const std::string& T) {
  return "T(" +
         std::string(ctx.in_type(k).dtype == ir::DType::kFloat16 || ctx.in_type(k).dtype == ir::DType::kBFloat16
                         ? "(float)"
                         : "") +
         "in" + std::to_string(k) + "[" + broadcast_offset(ctx.in_type(k).shape, ctx.out_type().shape, "i") + "])";
}

// The scalar attr as a literal of the compute type (integers stay exact for integer math).
std::string scalar_operand(const ir::Node& node, const std::string& T, ir::DType math_type) {
  if (ir::is_integral(math_type) && std::holds_alternative<int64_t>(node.attrs.get("scalar"))) {
    return "T(" + std::to_string(node.attrs.i("scalar")) + "LL)";
  }
  double v = node.attrs.f("scalar");
  return T == "double" ? double_literal(v) : "T" + float_literal(v);
}

}  // namespace

StatusOr<KernelSource> emit_Unary(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  std::string T = compute_type(ctx.out_type().dtype);
  for (const auto& rule : kUnaryRules) {
    if (rule.op != node.op || !rule_applies(rule, node)) continue;
    KF_ASSIGN_OR_RETURN(std::string expr, substitute(rule.expr, node, T));
    return elementwise_kernel(ctx, T, "    const T x = " + load(ctx, 0, T) + ";\n    const T y = " + expr + ";\n");
  }
  if (node.op == ir::OpId::kDropout) {
    return unsupported(
        "dropout in training mode with p > 0 is random; kforge cannot match torch's random mask (use eval mode, the "
        "cuda-agent protocol)");
  }
  return unsupported("no elementwise rule for " + ir::describe(ctx.graph, node) + " with these attrs");
}

StatusOr<KernelSource> emit_Binary(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  // Arithmetic in the promoted output type (int64 stays integer, bool*float is float).
  std::string T = compute_type(ctx.out_type().dtype);
  for (const auto& rule : kBinaryRules) {
    if (rule.op != node.op) continue;
    std::string a = load(ctx, 0, T);
    std::string b = ctx.has_input(1) ? load(ctx, 1, T) : scalar_operand(node, T, ctx.out_type().dtype);
    if (!ctx.has_input(1) && node.attrs.b("reverse")) std::swap(a, b);
    return elementwise_kernel(
        ctx, T, "    const T a = " + a + ";\n    const T b = " + b + ";\n    const T y = " + rule.expr + ";\n");
  }
  return unsupported("no binary rule for " + ir::describe(ctx.graph, node));
}

StatusOr<KernelSource> emit_Compare(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  // Compare in the promoted type of the operands; the result is bool.
  ir::DType operands = ctx.in_type(0).dtype;
  if (ctx.has_input(1)) operands = ir::promote(operands, ctx.in_type(1).dtype);
  if (!ctx.has_input(1) && std::holds_alternative<double>(node.attrs.get("scalar")) && ir::is_integral(operands)) {
    operands = ir::DType::kFloat32;
  }
  std::string T = compute_type(operands);
  for (const auto& rule : kBinaryRules) {
    if (rule.op != node.op) continue;
    std::string a = load(ctx, 0, T);
    std::string b = ctx.has_input(1) ? load(ctx, 1, T) : scalar_operand(node, T, operands);
    if (!ctx.has_input(1) && node.attrs.b("reverse")) std::swap(a, b);
    return elementwise_kernel(
        ctx, T, "    const T a = " + a + ";\n    const T b = " + b + ";\n    const bool y = " + rule.expr + ";\n");
  }
  return unsupported("no comparison rule for " + ir::describe(ctx.graph, node));
}

StatusOr<KernelSource> emit_Where(const EmitContext& ctx) {
  std::string T = compute_type(ctx.out_type().dtype);
  return elementwise_kernel(ctx, T,
                            "    const bool c = in0[" +
                                broadcast_offset(ctx.in_type(0).shape, ctx.out_type().shape, "i") +
                                "] != 0;\n    const T y = c ? " + load(ctx, 1, T) + " : " + load(ctx, 2, T) + ";\n");
}

StatusOr<KernelSource> emit_Cast(const EmitContext& ctx) {
  std::string T = compute_type(ctx.in_type(0).dtype);
  std::string body = "    const T y = " + load(ctx, 0, T) + ";\n";
  if (ctx.out_type().dtype == ir::DType::kBool) body = "    const bool y = " + load(ctx, 0, T) + " != T(0);\n";
  return elementwise_kernel(ctx, T, body);
}

StatusOr<KernelSource> emit_Full(const EmitContext& ctx) {
  std::string T = compute_type(ctx.out_type().dtype);
  double v = ctx.node().attrs.f("value");
  std::string lit =
      T == "double"
          ? double_literal(v)
          : (ir::is_floating(ctx.out_type().dtype) ? float_literal(v) : std::to_string(static_cast<int64_t>(v)) + "LL");
  return elementwise_kernel(ctx, T, "    const T y = T(" + lit + ");\n");
}

}  // namespace kforge::codegen
