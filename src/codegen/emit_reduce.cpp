// Reduce and ArgReduce families: sum, mean, amax, amin, prod, logsumexp, norm, var, argmax, argmin
// over any set of dims. The layout is coalesced and one of the shared reduction kernels
// (reduce_common.h) does the work; floating sums accumulate in double, integer ones in 64 bits
// (wrapping like torch), extremes propagate NaN, argmax/argmin keep the first index.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/reduce_common.h"
#include "ir/shape_rules.h"
#include "ir/strided_view.h"
#include "kernels/forms.h"

namespace kforge::codegen {

namespace {

using reduce::ll;

// `expr` converted to the output element type (16-bit floats through float).
std::string to_out(ir::DType t, const std::string& expr) {
  std::string c = ctype(t);
  if (t == ir::DType::kFloat16 || t == ir::DType::kBFloat16) return "(" + c + ")(float)(" + expr + ")";
  return "(" + c + ")(" + expr + ")";
}

struct AccDef {
  std::string code;     // the struct definition
  std::string init;     // statement on `a`
  std::string add;      // statement on `a`, `v`, `j`
  std::string add_vec;  // statement on `a` and four consecutive float elements v0..v3, or "" (reduce::Spec::add_vec)
  std::string result;   // expression of `a`: the final value (before conversion to the output type)
  int bytes = 16;
};

std::string shfl(const std::string& f) {
  return "r." + f + " = __shfl_down_sync(0xffffffffu, " + f + ", d); ";
}

std::string acc_struct(const std::string& A, const std::string& fields, const std::string& add_sig,
                       const std::string& add_body, const std::string& merge_body,
                       const std::vector<std::string>& shfl_fields) {
  std::ostringstream os;
  os << "struct " << A << " {\n"
     << "  " << fields << "\n"
     << "  __device__ __forceinline__ void add(" << add_sig << ") { " << add_body << " }\n"
     << "  __device__ __forceinline__ void merge(const " << A << "& o) { " << merge_body << " }\n"
     << "  __device__ __forceinline__ " << A << " shfl_down(int d) const { " << A << " r; ";
  for (const auto& f : shfl_fields) os << shfl(f);
  os << "return r; }\n};\n";
  return os.str();
}

// The accumulator of one Reduce op; CT is the compute type of the loaded element.
StatusOr<AccDef> reduce_acc(const ir::Node& node, const std::string& A, const std::string& CT, bool floating,
                            int64_t N) {
  AccDef d;
  const std::string AT = floating ? "double" : "unsigned long long";
  const bool dbl = CT == "double";
  const std::string fabsf = dbl ? "fabs" : "fabsf";
  switch (node.op) {
    case ir::OpId::kSum:
    case ir::OpId::kMean:
      d.code = acc_struct(A, AT + " s;", CT + " x", "s += (" + AT + ")x;", "s += o.s;", {"s"});
      d.init = "a.s = 0;";
      d.add = "a.add(v);";
      if (floating && !dbl) d.add_vec = "a.s += (double)((v0 + v1) + (v2 + v3));";
      d.result = node.op == ir::OpId::kSum ? "a.s" : "a.s / " + double_literal(static_cast<double>(N));
      d.bytes = 8;
      return d;
    case ir::OpId::kProd:
      d.code = acc_struct(A, AT + " s;", CT + " x", "s *= (" + AT + ")x;", "s *= o.s;", {"s"});
      d.init = "a.s = 1;";
      d.add = "a.add(v);";
      d.result = "a.s";
      d.bytes = 8;
      return d;
    case ir::OpId::kAmax:
    case ir::OpId::kAmin: {
      bool mx = node.op == ir::OpId::kAmax;
      std::string cmp = mx ? ">" : "<";
      d.code = acc_struct(A, CT + " m;", CT + " x", "if (x " + cmp + " m || kf_isnan(x)) m = x;",
                          "if (o.m " + cmp + " m || kf_isnan(o.m)) m = o.m;", {"m"});
      std::string ident =
          floating ? (mx ? "-INFINITY" : "INFINITY") : (mx ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL");
      d.init = "a.m = " + ident + ";";
      d.add = "a.add(v);";
      d.result = "a.m";
      d.bytes = 8;
      return d;
    }
    case ir::OpId::kLogSumExp:
      d.code = reduce::lse_acc(A, CT);
      d.init = "a.m = -INFINITY; a.s = 0.0;";
      d.add = "a.add(v);";
      if (!dbl) d.add_vec = "a.add4(v0, v1, v2, v3);";
      d.result =
          "(kf_isnan(a.m) ? (double)NAN : ((a.m == INFINITY || a.m == -INFINITY) ? (double)a.m : (double)a.m + "
          "log(a.s)))";
      return d;
    case ir::OpId::kNorm: {
      double p = node.attrs.f("p");
      if (std::isnan(p)) return unsupported("norm with p = nan is undefined");
      d.add = "a.add(v);";
      d.bytes = 8;
      if (std::isinf(p)) {
        bool mx = p > 0;
        std::string cmp = mx ? ">" : "<";
        d.code = acc_struct(A, CT + " m;", CT + " x",
                            "const " + CT + " ax = " + fabsf + "(x); if (ax " + cmp + " m || kf_isnan(ax)) m = ax;",
                            "if (o.m " + cmp + " m || kf_isnan(o.m)) m = o.m;", {"m"});
        d.init = mx ? "a.m = 0;" : "a.m = INFINITY;";
        d.result = "a.m";
        return d;
      }
      d.init = "a.s = 0.0;";
      std::string body;
      if (p == 2.0) {
        body = "s += (double)x * (double)x;";
        d.result = "sqrt(a.s)";
      } else if (p == 1.0) {
        body = "s += (double)" + fabsf + "(x);";
        d.result = "a.s";
      } else if (p == 0.0) {
        body = "s += (x != (" + CT + ")0) ? 1.0 : 0.0;";
        d.result = "a.s";
      } else {
        std::string lit = dbl ? double_literal(p) : float_literal(p);
        body = "s += (double)" + std::string(dbl ? "pow" : "powf") + "(" + fabsf + "(x), " + lit + ");";
        d.result = "pow(a.s, " + double_literal(1.0 / p) + ")";
      }
      d.code = acc_struct(A, "double s;", CT + " x", body, "s += o.s;", {"s"});
      return d;
    }
    case ir::OpId::kVar: {
      // Sums of shifted values (shift = the output's first element), in double: no cancellation
      // from a large mean, and partials of one output merge by plain addition.
      d.code = acc_struct(A, "double k, s1, s2;", CT + " x", "const double e = (double)x - k; s1 += e; s2 += e * e;",
                          "s1 += o.s1; s2 += o.s2;", {"k", "s1", "s2"});
      d.bytes = 24;
      d.add = "a.add(v);";
      double n = static_cast<double>(N);
      double dof = std::max(0.0, n - static_cast<double>(node.attrs.i("correction")));
      d.result = "((a.s2 - a.s1 * a.s1 / " + double_literal(n) + ") < 0.0 ? 0.0 : (a.s2 - a.s1 * a.s1 / " +
                 double_literal(n) + ")) / " + double_literal(dof);
      d.init = "a.s1 = 0.0; a.s2 = 0.0; a.k = 0.0;";
      return d;
    }
    default: return unsupported("no reduction rule for " + std::string(ir::op_info(node.op).name));
  }
}

KernelSource noop_kernel(const EmitContext& ctx) {
  KernelSource src = begin_source(ctx);
  src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

KernelSource assemble(const EmitContext& ctx, const std::string& headers, const std::string& acc_code,
                      const reduce::Code& rc) {
  KernelSource src = begin_source(ctx, headers);
  std::ostringstream os;
  os << reduce::device_prelude() << "\nnamespace {\n\n"
     << acc_code << "\n"
     << rc.device << "\n}  // namespace\n\n"
     << "// layout: " << rc.mode << "\n"
     << ctx.signature() << " {\n"
     << rc.host << "  return 0;\n}\n";
  src.code += os.str();
  src.launches = rc.launches;
  src.workspace_bytes = rc.workspace_bytes;
  return src;
}

}  // namespace

StatusOr<KernelSource> emit_Reduce(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& in = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  if (out.numel() == 0) return noop_kernel(ctx);
  KF_ASSIGN_OR_RETURN(auto dims, ir::reduction_dims(node.attrs.ints("dims"), in.shape.size()));
  reduce::Layout layout = reduce::make_layout(in.shape, dims);
  const bool floating = ir::is_floating(in.dtype);
  const std::string CT = reduce::compute_type(in.dtype);
  if ((node.op == ir::OpId::kAmax || node.op == ir::OpId::kAmin) && layout.N == 0) {
    return invalid_argument(std::string(ir::op_info(node.op).name) + " of an empty dim has no identity (torch raises)");
  }
  const std::string A = ctx.kernel.name + "_A";
  KF_ASSIGN_OR_RETURN(AccDef acc, reduce_acc(node, A, CT, floating, layout.N));

  reduce::Spec s;
  s.prefix = ctx.kernel.name + "_r";
  s.layout = layout;
  s.acc = A;
  s.acc_bytes = acc.bytes;
  s.elem = CT;
  s.load = "(" + CT + ")in0[off]";
  s.init = acc.init;
  if (node.op == ir::OpId::kVar && layout.N > 0) s.init += " a.k = (double)" + s.prefix + "_LOAD(base);";
  s.add = acc.add;
  s.add_vec = acc.add_vec;
  s.store = "out[o] = " + to_out(out.dtype, acc.result) + ";";
  s.params = "const " + ctype(in.dtype) + "* __restrict__ in0, " + ctype(out.dtype) + "* __restrict__ out";
  s.args = ctx.in_ptr(0) + ", " + ctx.out_ptr();
  if (in.dtype == ir::DType::kFloat32) {
    s.vec_ptr = "in0";
    s.vec_host = ctx.in_ptr(0);
  }
  s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  const std::vector<int> prologue(ctx.kernel.nodes.begin(), ctx.kernel.nodes.end() - 1);
  const bool views_alone = !prologue.empty() && std::all_of(prologue.begin(), prologue.end(), [&](int n) {
    return !ir::is_pointwise(ctx.graph.nodes()[static_cast<size_t>(n)]);
  });
  if (views_alone) {
    // A prologue of views alone (reduce_prologue over a permute, slice, unfold, ...): the reduction walks the
    // view's strides over its source, which is never copied.
    const ir::Node& last = ctx.graph.nodes()[static_cast<size_t>(prologue.back())];
    if (last.output != node.inputs[0] || !kernels::reads_through_views(ctx.graph, prologue))
      return internal_error("kernel " + ctx.kernel.name + ": the prologue is not a view the reduction reads");
    auto view = kernels::view_in_kernel(ctx.graph, prologue.back(), prologue);
    if (!view) return internal_error("kernel " + ctx.kernel.name + ": the prologue's views do not compose to strides");
    s.layout = reduce::make_layout(view->shape, view->strides, dims);
    const std::string source = "(" + ctx.ptr(view->source, false) + " + " + std::to_string(view->offset) + "LL)";
    s.args = source + ", " + ctx.out_ptr();
    if (in.dtype == ir::DType::kFloat32) s.vec_host = source;
  } else if (ctx.kernel.nodes.size() > 1) {
    // A pointwise prologue (the reduce_prologue skill): the reduced tensor is never stored; each
    // element is computed where the reduction would have loaded it.
    if (ctx.graph.nodes()[static_cast<size_t>(prologue.back())].output != node.inputs[0])
      return internal_error("kernel " + ctx.kernel.name + ": the prologue does not make the reduction's input");
    const std::string fn = ctx.kernel.name + "_prologue";
    KF_ASSIGN_OR_RETURN(PointwiseFunction f, pointwise_function(ctx, prologue, fn));
    s.load = "(" + CT + ")" + fn + "(off" + (f.call_args.empty() ? "" : ", " + f.call_args) + ")";
    s.params = (f.params.empty() ? "" : f.params + ", ") + ctype(out.dtype) + "* __restrict__ out";
    s.args = (f.host_args.empty() ? "" : f.host_args + ", ") + ctx.out_ptr();
    s.vec_ptr.clear();
    s.vec_host.clear();
    acc.code = "// The prologue, computed at each element the reduction reads:\n" + f.code + "\n" + acc.code;
    // Full-shape float operands only (one or two): the rows loop loads them 16 bytes at a time and
    // computes the prologue on the lanes.
    if (CT == "float") {
      if (auto lanes = pointwise_lane_function(ctx, prologue, fn + "_lanes", /*indexed=*/true)) {
        const auto& lv = lanes->lane_values;
        s.vec_ptr = "in" + std::to_string(lv[0]);
        s.vec_host = ctx.ptr(lv[0], false);
        if (lv.size() == 2) {
          s.vec_ptr2 = "in" + std::to_string(lv[1]);
          s.vec_host2 = ctx.ptr(lv[1], false);
        }
        // Broadcast operands (a per-column target) are read by the lane's element offset, base + jl.
        std::string call = lanes->takes_index ? "base + jl, V0" : "V0";
        if (lv.size() == 2) call += ", V1";
        for (auto p : lanes->pointers) call += ", in" + std::to_string(p);
        s.vec_value = fn + "_lanes(" + call + ")";
        acc.code = lanes->code + "\n" + acc.code;
      }
    }
  }
  reduce::Code rc = reduce::emit(s);
  return assemble(ctx, reduce::half_headers({in.dtype, out.dtype}), acc.code, rc);
}

StatusOr<KernelSource> emit_ArgReduce(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& in = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  if (out.numel() == 0) return noop_kernel(ctx);
  std::vector<int64_t> dims;
  if (node.attrs.is_null("dim")) {
    for (size_t i = 0; i < in.shape.size(); ++i) dims.push_back(static_cast<int64_t>(i));
  } else {
    KF_ASSIGN_OR_RETURN(dims, ir::reduction_dims({node.attrs.i("dim")}, in.shape.size()));
  }
  reduce::Layout layout = reduce::make_layout(in.shape, dims);
  if (layout.N == 0)
    return invalid_argument(std::string(ir::op_info(node.op).name) + " of an empty dim has no answer (torch raises)");
  const bool floating = ir::is_floating(in.dtype);
  const bool mx = node.op == ir::OpId::kArgmax;
  const std::string CT = reduce::compute_type(in.dtype);
  const std::string A = ctx.kernel.name + "_A";
  const std::string cmp = mx ? ">" : "<";
  // b (value y at index k) beats the current (v, i): NaN is the extreme; ties go to the lower index.
  std::string better = "(kf_isnan(v) ? (kf_isnan(y) && k < i) : (kf_isnan(y) || y " + cmp + " v || (y == v && k < i)))";
  AccDef acc;
  acc.code = acc_struct(A, CT + " v; long long i;", CT + " y, long long k", "if " + better + " { v = y; i = k; }",
                        "add(o.v, o.i);", {"v", "i"});
  std::string ident =
      floating ? (mx ? "-INFINITY" : "INFINITY") : (mx ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL");
  acc.init = "a.v = " + ident + "; a.i = 9223372036854775807LL;";
  acc.add = "a.add(v, j);";
  reduce::Spec s;
  s.prefix = ctx.kernel.name + "_r";
  s.layout = layout;
  s.acc = A;
  s.acc_bytes = 16;
  s.elem = CT;
  s.load = "(" + CT + ")in0[off]";
  s.init = acc.init;
  s.add = acc.add;
  s.store = "out[o] = (int64_t)a.i;";
  s.params = "const " + ctype(in.dtype) + "* __restrict__ in0, int64_t* __restrict__ out";
  s.args = ctx.in_ptr(0) + ", " + ctx.out_ptr();
  if (in.dtype == ir::DType::kFloat32) {
    s.vec_ptr = "in0";
    s.vec_host = ctx.in_ptr(0);
  }
  s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  reduce::Code rc = reduce::emit(s);
  return assemble(ctx, reduce::half_headers({in.dtype}), acc.code, rc);
}

}  // namespace kforge::codegen
