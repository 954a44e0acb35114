// Elementwise families (unary, binary incl. integer-style division and bit operations, compare, logical,
// where, cast, full): one grid-stride kernel computes a
// chain of elementwise nodes (one node, or several fused by the fuse_elementwise skill) at each
// output index; values made inside the kernel live in registers, every other operand is loaded with
// broadcast index arithmetic (shapes baked in). Each node computes in float (double for float64,
// the integer type for integers) and rounds to its own dtype, exactly as the unfused ops would.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <span>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"
#include "kernels/forms.h"

namespace kforge::codegen {

namespace {

// The vector kernel's walk when the knob "walk" is not set (see elementwise_chain_kernel): one tile
// per block. bench/micro/elementwise_variants.cu on the H200 (relu, 1.6e9 floats): 3.10 ms in tiles of
// 4 vectors per thread, 3.24 ms grid-stride (one vector or four per iteration alike), 4.15 vs 3.97 TB/s.
constexpr int64_t kDefaultWalk = 1;
// 16-byte vectors per thread when the knob "unroll" is not set. The same microbench on the H200
// (bench/results/2026-12-04-elementwise-variants_f15cf9e.txt): tiles of one vector per thread 3.012 ms
// (256 threads) and 3.003 (128, torch's shape), two 3.101, four 3.118 (kforge's until then).
constexpr int64_t kDefaultUnroll = 1;

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

// The open side of a clamp in compute type T: -inf / +inf for floats; an integer type's own lowest / highest
// value (converting an infinity to an integer is undefined behaviour in C++).
std::string open_bound(const std::string& T, bool low) {
  if (T == "int64_t") return low ? "T(-9223372036854775807LL - 1)" : "T(9223372036854775807LL)";
  if (T == "int32_t") return low ? "T(-2147483647 - 1)" : "T(2147483647)";
  if (T == "int8_t") return low ? "T(-128)" : "T(127)";
  if (T == "uint8_t") return low ? "T(0)" : "T(255)";
  if (T == "int") return low ? "T(0)" : "T(1)";  // bool computes in int
  return low ? "T(-INFINITY)" : "T(INFINITY)";
}

// Replaces $attr with a literal of the compute type; a null attr becomes the open side of a clamp (names
// that start with "min" are lower bounds).
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
      out += open_bound(T, name.rfind("min", 0) == 0);
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

bool is_16bit(ir::DType t) {
  return t == ir::DType::kFloat16 || t == ir::DType::kBFloat16;
}

// An operand of a node inside the kernel: a C expression of its value (a register or a load) in
// its own element type.
struct Operand {
  std::string expr;
  ir::DType dtype = ir::DType::kFloat32;
};

// `T(operand)`: the operand converted to the compute type.
std::string as_t(const Operand& o) {
  return "T(" + std::string(is_16bit(o.dtype) ? "(float)" : "") + o.expr + ")";
}

// The scalar attr as a literal of the compute type (integers stay exact for integer math).
std::string scalar_operand(const ir::Node& node, const std::string& T, ir::DType math_type) {
  if (ir::is_integral(math_type) && std::holds_alternative<int64_t>(node.attrs.get("scalar"))) {
    return "T(" + std::to_string(node.attrs.i("scalar")) + "LL)";
  }
  double v = node.attrs.f("scalar");
  return T == "double" ? double_literal(v) : "T" + float_literal(v);
}

// Statements that compute one node into the already declared variable `out` (of the node's output
// type) from its operands (absent optional inputs are empty Operands).
StatusOr<std::string> node_statements(const ir::Graph& g, const ir::Node& node, const std::vector<Operand>& ops,
                                      const std::string& out) {
  const ir::DType out_dtype = g.type(node.output).dtype;
  const std::string out_t = ctype(out_dtype);
  const bool has_b = ops.size() > 1 && !ops[1].expr.empty();
  std::string T;
  std::string lines;
  std::string value;
  switch (ir::op_info(node.op).family) {
    case ir::OpFamily::kUnary: {
      T = compute_type(out_dtype);
      if (node.op == ir::OpId::kBitwiseNot && out_dtype == ir::DType::kBool) {  // ~ of a bool is its logical not
        lines = "const T x = " + as_t(ops[0]) + "; ";
        value = "(x == T(0))";
        break;
      }
      for (const auto& rule : kUnaryRules) {
        if (rule.op != node.op || !rule_applies(rule, node)) continue;
        KF_ASSIGN_OR_RETURN(value, substitute(rule.expr, node, T));
        lines = "const T x = " + as_t(ops[0]) + "; ";
        break;
      }
      if (value.empty()) {
        if (node.op == ir::OpId::kDropout) {
          return unsupported(
              "dropout in training mode with p > 0 is random; kforge cannot match torch's random mask (use eval "
              "mode, the cuda-agent protocol)");
        }
        return unsupported("no elementwise rule for " + ir::describe(g, node) + " with these attrs");
      }
      break;
    }
    case ir::OpFamily::kBinary:
    case ir::OpFamily::kCompare: {
      // Binary ops compute in the promoted output type (int64 stays integer, bool*float is float);
      // comparisons in the promoted type of their operands, with a bool result.
      ir::DType math = out_dtype;
      if (ir::op_info(node.op).family == ir::OpFamily::kCompare) {
        math = g.type(node.inputs[0]).dtype;
        if (has_b) math = ir::promote(math, g.type(node.inputs[1]).dtype);
        if (!has_b && std::holds_alternative<double>(node.attrs.get("scalar")) && ir::is_integral(math)) {
          math = ir::DType::kFloat32;
        }
      }
      T = compute_type(math);
      for (const auto& rule : kBinaryRules) {
        if (rule.op != node.op) continue;
        std::string a = as_t(ops[0]);
        std::string b = has_b ? as_t(ops[1]) : scalar_operand(node, T, math);
        if (!has_b && node.attrs.b("reverse")) std::swap(a, b);
        lines = "const T a = " + a + "; const T b = " + b + "; ";
        value = rule.expr;
        break;
      }
      if (value.empty()) return unsupported("no binary rule for " + ir::describe(g, node));
      break;
    }
    case ir::OpFamily::kLogical: {
      // In the promoted type of the operands; the rules test against zero, so NaN is true as in torch.
      const bool unary = node.inputs.size() == 1;  // logical_not, isnan, isinf, ...
      ir::DType math = g.type(node.inputs[0]).dtype;
      if (!unary) math = ir::promote(math, g.type(node.inputs[1]).dtype);
      T = compute_type(math);
      for (const auto& rule :
           unary ? std::span<const ElementwiseRule>(kUnaryRules) : std::span<const ElementwiseRule>(kBinaryRules)) {
        if (rule.op != node.op) continue;
        lines = unary ? "const T x = " + as_t(ops[0]) + "; "
                      : "const T a = " + as_t(ops[0]) + "; const T b = " + as_t(ops[1]) + "; ";
        value = rule.expr;
        break;
      }
      if (value.empty()) return unsupported("no logical rule for " + ir::describe(g, node));
      break;
    }
    case ir::OpFamily::kWhere:
      T = compute_type(out_dtype);
      value = "((" + ops[0].expr + ") != 0 ? " + as_t(ops[1]) + " : " + as_t(ops[2]) + ")";
      break;
    case ir::OpFamily::kCast:
      T = compute_type(ops[0].dtype);
      value = out_dtype == ir::DType::kBool ? "(" + as_t(ops[0]) + " != T(0))" : as_t(ops[0]);
      break;
    case ir::OpFamily::kFull: {
      T = compute_type(out_dtype);
      double v = node.attrs.f("value");
      if (!ir::is_floating(out_dtype) && !std::isfinite(v)) {
        // torch: inf and nan are true as bools and do not convert to integers.
        if (out_dtype != ir::DType::kBool)
          return invalid_argument(ir::describe(g, node) + ": the non-finite value does not fit its integer dtype");
        v = 1;
      }
      value = "T(" +
              (T == "double"
                   ? double_literal(v)
                   : (ir::is_floating(out_dtype) ? float_literal(v) : std::to_string(static_cast<int64_t>(v)) + "LL")) +
              ")";
      break;
    }
    case ir::OpFamily::kNorm: {
      // batch_norm with running statistics (ir::is_pointwise): torch's inference transform,
      // (x - mean) * (1 / sqrt(var + eps)) * weight + bias, in the compute type.
      if (node.op != ir::OpId::kBatchNorm || !ir::is_pointwise(node) || ops.size() < 5 || ops[3].expr.empty() ||
          ops[4].expr.empty()) {
        return internal_error("node_statements: " + ir::describe(g, node) + " is not pointwise");
      }
      T = compute_type(out_dtype);
      const std::string eps =
          T == "double" ? double_literal(node.attrs.f("eps")) : "T" + float_literal(node.attrs.f("eps"));
      lines = "const T x = " + as_t(ops[0]) + "; const T invstd = T(1) / sqrt(" + as_t(ops[4]) + " + " + eps + "); ";
      value = "(x - " + as_t(ops[3]) + ") * invstd";
      if (!ops[1].expr.empty()) value = "(" + value + ") * " + as_t(ops[1]);
      if (!ops[2].expr.empty()) value = "(" + value + ") + " + as_t(ops[2]);
      break;
    }
    default: return internal_error("node_statements: " + ir::describe(g, node) + " is not elementwise");
  }
  return "{ typedef " + T + " T; " + lines + out + " = (" + out_t + ")(" + value + "); }";
}

std::string fp16_headers(const ir::Graph& g, const schedule::Kernel& k) {
  bool half = false;
  for (int n : k.nodes) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
    for (auto v : node.inputs) half = half || (v != ir::kNoValue && is_16bit(g.type(v).dtype));
    half = half || is_16bit(g.type(node.output).dtype);
  }
  return half ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "";
}

}  // namespace

// The chain's statements at linear index `i` (an int64_t) of the last node's output: each node into
// a register r<value>. Operands made outside are kernel parameters in<value> (added to `params` in
// first-use order); with `vec`, full-shape 4-byte ones are read as lane `l` of a 16-byte load
// v<value> (added to `vector_loads`), and the seed's out[i] as vout[l].
// With `row_extent` > 0, a broadcast operand whose offset depends on i / row_extent alone is read at
// `i_row` (the first index of i's row of row_extent elements): the same address for a whole row, which
// the compiler loads once where the caller computes several elements of one row.
static StatusOr<std::string> chain_statements(const ir::Graph& g, const std::vector<int>& nodes, const ChainSeed& seed,
                                              bool vec, std::vector<ir::ValueIndex>& params,
                                              std::vector<ir::ValueIndex>& vector_loads, int64_t row_extent = 0) {
  const ir::Shape& shape = g.type(g.nodes()[static_cast<size_t>(nodes.back())].output).shape;
  auto four_byte = [&](ir::ValueIndex v) { return ir::dtype_size(g.type(v).dtype) == 4; };
  std::vector<bool> in_kernel(g.values().size(), false);
  std::ostringstream body;
  if (seed.value != ir::kNoValue) {
    std::string expr = seed.expr;
    if (vec) {
      for (size_t at = expr.find("out[i]"); at != std::string::npos; at = expr.find("out[i]", at))
        expr.replace(at, 6, "vout[l]");
    }
    body << "    const " << ctype(g.type(seed.value).dtype) << " r" << seed.value << " = " << expr << ";\n";
    in_kernel[static_cast<size_t>(seed.value)] = true;
  }
  // Views read in place (kernels::reads_through_views): each view node's value as strides over its source.
  std::map<ir::ValueIndex, ir::StridedView> views;
  auto view_read = [&](ir::ValueIndex v, const std::string& at) {
    const ir::StridedView& view = views.at(v);
    if (std::find(params.begin(), params.end(), view.source) == params.end()) params.push_back(view.source);
    return "in" + std::to_string(view.source) + "[" + strided_offset(view, shape, at) + "]";
  };
  for (int k : nodes) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(k)];
    if (!ir::is_pointwise(node) && ir::is_view_op(node.op)) {
      const ir::ValueIndex in = node.inputs[0];
      if (in_kernel[static_cast<size_t>(in)])
        return internal_error(ir::describe(g, node) + " is a view of a value the kernel computes");
      auto found = views.find(in);
      auto view = ir::apply_view(g, node, found != views.end() ? found->second : ir::whole_view(g, in));
      if (!view) return internal_error(ir::describe(g, node) + " is not a view over strides of its input");
      views[node.output] = *view;
      // The kernel's result is the view itself (a prologue of views alone): read it at i.
      if (k == nodes.back()) {
        body << "    const " << ctype(g.type(node.output).dtype) << " r" << node.output << " = "
             << view_read(node.output, "i") << ";\n";
      }
      continue;
    }
    std::vector<Operand> ops;
    for (auto v : node.inputs) {
      if (v == ir::kNoValue) {
        ops.push_back({});
        continue;
      }
      Operand o{"", g.type(v).dtype};
      if (in_kernel[static_cast<size_t>(v)]) {
        o.expr = "r" + std::to_string(v);
      } else if (views.count(v)) {
        o.expr = view_read(v, "i");
      } else {
        if (std::find(params.begin(), params.end(), v) == params.end()) params.push_back(v);
        // batch_norm's per-channel operands (weight, bias, running mean and variance) index dim 1.
        const bool per_channel = node.op == ir::OpId::kBatchNorm && v != node.inputs[0];
        const bool full = !per_channel && g.type(v).shape == shape;
        if (vec && full && four_byte(v)) {
          if (std::find(vector_loads.begin(), vector_loads.end(), v) == vector_loads.end()) vector_loads.push_back(v);
          o.expr = "v" + std::to_string(v) + "[l]";
        } else {
          const ir::Shape& in_shape = per_channel ? channel_shape(shape) : g.type(v).shape;
          const std::string at = row_extent > 0 && row_invariant_offset(in_shape, shape, row_extent) ? "i_row" : "i";
          o.expr = "in" + std::to_string(v) + "[" +
                   (per_channel ? channel_offset(shape, at) : broadcast_offset(in_shape, shape, at)) + "]";
        }
      }
      ops.push_back(o);
    }
    const std::string var = "r" + std::to_string(node.output);
    KF_ASSIGN_OR_RETURN(std::string stmt, node_statements(g, node, ops, var));
    body << "    " << ctype(g.type(node.output).dtype) << " " << var << ";\n    " << stmt << "\n";
    in_kernel[static_cast<size_t>(node.output)] = true;
  }
  return body.str();
}

StatusOr<std::string> elementwise_chain_kernel(const EmitContext& ctx, const std::vector<int>& nodes,
                                               const std::string& name, const ChainSeed& seed, std::string& launch) {
  const ir::Graph& g = ctx.graph;
  const ir::Node& root = g.nodes()[static_cast<size_t>(nodes.back())];
  const ir::TensorType& out_type = g.type(root.output);
  const ir::Shape& shape = out_type.shape;
  const int64_t n = out_type.numel();
  if (!kernels::reads_through_views(g, nodes) || !ir::is_pointwise(root))
    return internal_error("kernel " + name + " is not an elementwise chain (pointwise ops reading values or views)");
  for (int k : nodes) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(k)];
    if (k != nodes.back() && ir::is_pointwise(node) && g.type(node.output).shape != shape) {
      return internal_error("kernel " + name + ": " + ir::describe(g, node) + " does not have the chain's shape " +
                            ir::shape_str(shape));
    }
  }
  if (seed.value != ir::kNoValue && g.type(seed.value).shape != shape)
    return internal_error("kernel " + name + ": the seed value does not have the chain's shape");

  // Values made outside the kernel, one kernel parameter each, in first-use order.
  std::vector<ir::ValueIndex> params;
  // Full-shape 4-byte operands (and a 4-byte output): the vector form loads them 16 bytes at a time.
  auto four_byte = [&](ir::ValueIndex v) { return ir::dtype_size(g.type(v).dtype) == 4; };
  std::vector<ir::ValueIndex> vector_loads;
  KF_ASSIGN_OR_RETURN(std::string scalar_body, chain_statements(g, nodes, seed, false, params, vector_loads));
  // The vector form: 4 consecutive elements per thread and iteration, 16-byte loads and store; used
  // when the sizes allow it (knob "vector" = 4, the default; 1 turns it off) and, checked at run
  // time, every vector-loaded pointer is 16-byte aligned.
  const bool vectorize =
      ctx.kernel.knob(schedule::Knob::kVector, 4) == 4 && n % 4 == 0 && n > 0 && four_byte(root.output);
  std::string vector_body;
  if (vectorize) {
    KF_ASSIGN_OR_RETURN(vector_body, chain_statements(g, nodes, seed, true, params, vector_loads));
  }

  const int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  const std::string out_var = "r" + std::to_string(root.output);
  const std::string out_t = ctype(out_type.dtype);
  std::ostringstream os, decl, args;
  for (auto v : params) {
    decl << "const " << ctype(g.type(v).dtype) << "* __restrict__ in" << v << ", ";
    args << ctx.ptr(v, false) << ", ";
  }
  for (const auto& [d, a] : seed.params) {
    decl << d << ", ";
    args << a << ", ";
  }
  // With a seed reading out[i], the output is read and written at the same index: not __restrict__.
  const bool reads_out = seed.value != ir::kNoValue && seed.expr.find("out[i]") != std::string::npos;
  const std::string out_decl = out_t + (reads_out ? "* out" : "* __restrict__ out");
  os << "__global__ void __launch_bounds__(" << block << ") " << name << "(" << decl.str() << out_decl << ") {\n"
     << "  KF_GRID_STRIDE(i, " << n << "LL) {\n"
     << scalar_body << "    out[i] = " << out_var << ";\n"
     << "  }\n"
     << "}\n";
  const std::string out_arg = ctx.ptr(root.output, true);
  auto launch_of = [&](const std::string& kernel, int64_t items) {
    return "  " + kernel + "<<<kf_grid(" + std::to_string(items) + "LL, " + std::to_string(block) + "), " +
           std::to_string(block) + ", 0, ctx->stream>>>(" + args.str() + out_arg + ");\n";
  };
  if (!vectorize) {
    launch = launch_of(name, n) + "  KF_LAUNCHED();\n";
    return os.str();
  }
  // Lane l of a 16-byte load, as a 4-element array view of the float4 / int4 register.
  auto vec_t = [&](ir::ValueIndex v) { return ir::is_floating(g.type(v).dtype) ? "float4" : "int4"; };
  // Each thread loads `unroll` 16-byte vectors (a block or a grid apart, so a warp's accesses stay
  // contiguous) before it computes and stores any: more bytes in flight per thread.
  const int64_t unroll = ctx.kernel.knob(schedule::Knob::kUnroll, kDefaultUnroll);
  if (unroll < 1 || unroll > 8)
    return invalid_argument("kernel " + name + ": the knob unroll must be 1 to 8 (vectors per thread), not " +
                            std::to_string(unroll));
  const std::string u = std::to_string(unroll);
  const std::string n4 = std::to_string(n / 4) + "LL";
  // The knob "walk": 0, grid-stride loops over a capped grid (the vectors of a thread one grid apart);
  // 1, one block per tile of block * unroll vectors and no loop (a thread's vectors one block apart),
  // the way torch's vectorized elementwise kernel walks.
  const int64_t walk = ctx.kernel.knob(schedule::Knob::kWalk, kDefaultWalk);
  if (walk != 0 && walk != 1)
    return invalid_argument("kernel " + name + ": the knob walk must be 0 (grid-stride) or 1 (tiles), not " +
                            std::to_string(walk));
  const bool tiles = walk == 1;
  os << "// The same chain, 4 elements per 16-byte load and store, " << u << " vectors per thread in flight"
     << (tiles ? ", one tile per block" : "") << ".\n"
     << "__global__ void __launch_bounds__(" << block << ") " << name << "_x4(" << decl.str() << out_decl << ") {\n";
  if (tiles) {
    os << "  const int64_t step = blockDim.x;\n"
       << "  {\n"
       << "    const int64_t q0 = (int64_t)blockIdx.x * blockDim.x * " << u << " + threadIdx.x;\n";
  } else {
    os << "  const int64_t step = (int64_t)gridDim.x * blockDim.x;\n"
       << "  for (int64_t q0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q0 < " << n4 << "; q0 += " << u
       << " * step) {\n";
  }
  // Each vector load: the register array it fills, the pointer it reads, the vector type.
  struct VectorLoad {
    std::string array, pointer, type;
  };
  std::vector<VectorLoad> loaded;
  for (auto v : vector_loads) loaded.push_back({"p" + std::to_string(v), "in" + std::to_string(v), vec_t(v)});
  const std::string ovec = ir::is_floating(out_type.dtype) ? "float4" : "int4";
  if (reads_out) loaded.push_back({"pout", "out", ovec});
  for (const auto& l : loaded) os << "    " << l.type << " " << l.array << "[" << u << "];\n";
  os << "#pragma unroll\n"
     << "    for (int u = 0; u < " << u << "; ++u) {\n"
     << "      const int64_t q = q0 + u * step;\n"
     << "      if (q < " << n4 << ") {\n";
  for (const auto& l : loaded)
    os << "        " << l.array << "[u] = reinterpret_cast<const " << l.type << "*>(" << l.pointer << ")[q];\n";
  os << "      }\n"
     << "    }\n"
     << "#pragma unroll\n"
     << "    for (int u = 0; u < " << u << "; ++u) {\n"
     << "    const int64_t q = q0 + u * step;\n"
     << "    if (q >= " << n4 << ") break;\n";
  for (auto v : vector_loads) {
    os << "    const " << ctype(g.type(v).dtype) << "* v" << v << " = reinterpret_cast<const " << ctype(g.type(v).dtype)
       << "*>(&p" << v << "[u]);\n";
  }
  if (reads_out) os << "    const " << out_t << "* vout = reinterpret_cast<const " << out_t << "*>(&pout[u]);\n";
  os << "    " << ovec << " res;\n"
     << "    " << out_t << "* vres = reinterpret_cast<" << out_t << "*>(&res);\n"
     << "#pragma unroll\n"
     << "    for (int l = 0; l < 4; ++l) {\n"
     << "    const int64_t i = q * 4 + l;\n"
     << "    (void)i;\n"
     << vector_body << "    vres[l] = " << out_var << ";\n"
     << "    }\n"
     << "    reinterpret_cast<" << ovec << "*>(out)[q] = res;\n"
     << "    }\n"
     << "  }\n"
     << "}\n";
  std::string aligned = "(reinterpret_cast<uintptr_t>(" + out_arg + ")";
  for (auto v : vector_loads) aligned += " | reinterpret_cast<uintptr_t>(" + ctx.ptr(v, false) + ")";
  aligned += ") % 16 == 0";
  const int64_t vector_threads = (n / 4 + unroll - 1) / unroll;
  const std::string vector_launch =
      tiles ? "  " + name + "_x4<<<" + std::to_string((vector_threads + block - 1) / block) + "u, " +
                  std::to_string(block) + ", 0, ctx->stream>>>(" + args.str() + out_arg + ");\n"
            : launch_of(name + "_x4", vector_threads);
  launch = "  if (" + aligned + ") {\n  " + vector_launch + "  } else {\n  " + launch_of(name, n) +
           "  }\n  KF_LAUNCHED();\n";
  return os.str();
}

StatusOr<PointwiseFunction> pointwise_function(const EmitContext& ctx, const std::vector<int>& nodes,
                                               const std::string& name, ir::ValueIndex seed_value, int64_t row_extent) {
  const ir::Graph& g = ctx.graph;
  if (!kernels::reads_through_views(g, nodes))
    return internal_error(name + ": not a chain of pointwise ops reading values or views in place");
  std::vector<ir::ValueIndex> params, unused;
  ChainSeed seed;
  if (seed_value != ir::kNoValue) {
    seed.value = seed_value;
    seed.expr = "seed";
  }
  KF_ASSIGN_OR_RETURN(std::string body, chain_statements(g, nodes, seed, false, params, unused, row_extent));
  const ir::ValueIndex result = g.nodes()[static_cast<size_t>(nodes.back())].output;
  PointwiseFunction f;
  f.row_extent = row_extent;
  std::string decl;
  for (size_t j = 0; j < params.size(); ++j) {
    const std::string sep = j ? ", " : "";
    const std::string p = "in" + std::to_string(params[j]);
    decl += sep + "const " + ctype(g.type(params[j]).dtype) + "* __restrict__ " + p;
    f.call_args += sep + p;
    f.host_args += sep + ctx.ptr(params[j], false);
  }
  f.params = decl;
  const std::string seed_decl =
      seed_value == ir::kNoValue ? "" : ", const " + ctype(g.type(seed_value).dtype) + " seed";
  // i_row comes last, so that callers without it keep their calls; then it is derived from i.
  const std::string row = std::to_string(row_extent) + "LL";
  f.code = "__device__ __forceinline__ " + ctype(g.type(result).dtype) + " " + name + "(long long i" + seed_decl +
           (decl.empty() ? "" : ", " + decl) + (row_extent > 0 ? ", long long i_row = -1" : "") + ") {\n" +
           (row_extent > 0 ? "    if (i_row < 0) i_row = i / " + row + " * " + row + ";\n    (void)i_row;\n" : "") +
           body + "    return r" + std::to_string(result) + ";\n}\n";
  return f;
}

std::optional<LaneFunction> pointwise_lane_function(const EmitContext& ctx, const std::vector<int>& nodes,
                                                    const std::string& name, bool indexed) {
  const ir::Graph& g = ctx.graph;
  if (!kernels::reads_through_views(g, nodes)) return std::nullopt;
  const ir::ValueIndex result = g.nodes()[static_cast<size_t>(nodes.back())].output;
  if (g.type(result).dtype != ir::DType::kFloat32) return std::nullopt;
  std::vector<ir::ValueIndex> params, lanes;
  auto body = chain_statements(g, nodes, {}, /*vec=*/true, params, lanes);
  if (!body.is_ok() || lanes.empty() || lanes.size() > 2) return std::nullopt;
  if (params.size() != lanes.size() && !indexed) return std::nullopt;
  for (auto v : lanes) {
    if (g.type(v).dtype != ir::DType::kFloat32) return std::nullopt;
    // A lane value also read through a view (x - x.flip(-1)) needs its pointer, which the lanes replace.
    if (body->find("in" + std::to_string(v) + "[") != std::string::npos) return std::nullopt;
  }
  // Without `indexed` the statements may read the element index `i` only through operands, which are
  // all lanes then; an op whose value depends on the index itself keeps the offset form.
  static const std::regex uses_index(R"(\bi\b)");
  const bool reads_index = std::regex_search(*body, uses_index);
  if (reads_index && !indexed) return std::nullopt;
  LaneFunction f;
  f.lane_values = lanes;
  f.takes_index = reads_index;
  std::string decl = reads_index ? "const long long i" : "", views;
  for (size_t j = 0; j < lanes.size(); ++j) {
    const std::string v = std::to_string(lanes[j]);
    decl += (decl.empty() ? "" : ", ") + std::string("const float a") + v;
    views += "    const float* v" + v + " = &a" + v + ";\n";
  }
  for (auto p : params) {
    if (std::find(lanes.begin(), lanes.end(), p) != lanes.end()) continue;
    f.pointers.push_back(p);
    decl += ", const " + ctype(g.type(p).dtype) + "* __restrict__ in" + std::to_string(p);
  }
  f.code = "__device__ __forceinline__ float " + name + "(" + decl + ") {\n    const int l = 0;\n" + views + *body +
           "    return r" + std::to_string(result) + ";\n}\n";
  return f;
}

Status append_library_epilogue(const EmitContext& ctx, const std::string& library_fn, const ChainSeed& seed,
                               const std::string& what, KernelSource& src) {
  const ir::Graph& g = ctx.graph;
  src.name = ctx.kernel.name;
  src.file_name = ctx.kernel.name + ".cu";
  if (ctx.out_type().numel() == 0) {
    src.code += "\n" + ctx.signature() + " {\n  return " + library_fn + "(ctx, bufs);\n}\n";
    return Status::ok();
  }
  const std::vector<int> chain(ctx.kernel.nodes.begin() + 1, ctx.kernel.nodes.end());
  std::string launch;
  KF_ASSIGN_OR_RETURN(std::string epilogue,
                      elementwise_chain_kernel(ctx, chain, ctx.kernel.name + "_epilogue", seed, launch));
  std::string described;
  for (int n : chain) described += "//   " + ir::describe(g, g.nodes()[static_cast<size_t>(n)]) + "\n";
  src.code += "\n// " + what + ":\n" + described + "namespace {\n" + epilogue + "}  // namespace\n\n" +
              ctx.signature() + " {\n  const int rc = " + library_fn + "(ctx, bufs);\n  if (rc != 0) return rc;\n" +
              launch + "  return 0;\n}\n";
  src.launches += 1;
  return Status::ok();
}

// The kernel of an elementwise chain: its nodes in order, the last one's output written.
StatusOr<KernelSource> emit_elementwise_chain(const EmitContext& ctx) {
  const ir::Graph& g = ctx.graph;
  KernelSource src = begin_source(ctx, fp16_headers(g, ctx.kernel));
  if (ctx.kernel.nodes.size() > 1) {
    std::string chain;
    for (int k : ctx.kernel.nodes) chain += "//   " + ir::describe(g, g.nodes()[static_cast<size_t>(k)]) + "\n";
    src.code = src.code.substr(0, src.code.find('\n') + 1) + "// fused elementwise chain:\n" + chain +
               src.code.substr(src.code.find('\n') + 1);
  }
  std::string launch;
  KF_ASSIGN_OR_RETURN(std::string kernel,
                      elementwise_chain_kernel(ctx, ctx.kernel.nodes, ctx.kernel.name + "_kernel", {}, launch));
  if (ctx.out_type().numel() == 0) {
    src.code += ctx.signature() + " { return 0; }\n";
    src.launches = 0;
    return src;
  }
  src.code += "namespace {\n" + kernel + "}  // namespace\n\n" + ctx.signature() + " {\n" + launch + "  return 0;\n}\n";
  return src;
}

StatusOr<KernelSource> emit_Unary(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Binary(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Compare(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Where(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Cast(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Full(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}
StatusOr<KernelSource> emit_Logical(const EmitContext& ctx) {
  return emit_elementwise_chain(ctx);
}

}  // namespace kforge::codegen
