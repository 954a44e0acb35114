// Loss families.
//   Loss: cross_entropy (class-index or probability targets, ignore_index, label_smoothing),
//         mse_loss, l1_loss, smooth_l1_loss, huber_loss, kl_div (log_target), with broadcasting.
//   TripletLoss: triplet_margin_loss (p-norm pairwise distances with eps, swap, margin).
// Reduction none writes the per-element (per-sample) loss directly. mean / sum / batchmean reduce
// to a scalar with the shared reduction kernels (reduce_common.h): deterministic, per-thread double
// accumulation, a split over blocks with a second merging pass. Per-sample losses of
// cross_entropy and triplet_margin_loss go to ctx->workspace (double) between the two stages.
#include <cmath>
#include <optional>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/emit.h"
#include "codegen/reduce_common.h"

namespace kforge::codegen {

namespace {

using reduce::ll;

std::string to_out(ir::DType t, const std::string& expr) {
  std::string c = ctype(t);
  if (t == ir::DType::kFloat16 || t == ir::DType::kBFloat16) return "(" + c + ")(float)(" + expr + ")";
  return "(" + c + ")(" + expr + ")";
}

std::string load(ir::DType t, const std::string& CT, const std::string& expr) {
  return ir::is_floating(t) ? "(" + CT + ")" + expr : "(" + CT + ")(long long)" + expr;
}

std::string lit(const std::string& CT, double v) {
  return CT == "double" ? double_literal(v) : float_literal(v);
}

KernelSource noop_kernel(const EmitContext& ctx) {
  KernelSource src = begin_source(ctx);
  src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

// A double sum (and count) accumulator for the second stage.
std::string sum_acc(const std::string& A, bool count) {
  std::ostringstream os;
  os << "struct " << A << " {\n"
     << "  double s" << (count ? ", c" : "") << ";\n"
     << "  __device__ __forceinline__ void add(" << (count ? "double2" : "double") << " v) { "
     << (count ? "s += v.x; c += v.y;" : "s += v;") << " }\n"
     << "  __device__ __forceinline__ void merge(const " << A << "& o) { s += o.s; " << (count ? "c += o.c; " : "")
     << "}\n"
     << "  __device__ __forceinline__ " << A << " shfl_down(int d) const { " << A
     << " r; r.s = __shfl_down_sync(0xffffffffu, s, d); "
     << (count ? "r.c = __shfl_down_sync(0xffffffffu, c, d); " : "") << "return r; }\n"
     << "};\n";
  return os.str();
}

struct Assembled {
  std::ostringstream dev, host;
  int64_t launches = 0;
  size_t workspace = 0;
  std::string mode;
};

void add_reduction(Assembled& out, const reduce::Spec& s) {
  reduce::Code rc = reduce::emit(s);
  out.dev << rc.device;
  out.host << rc.host;
  out.launches += rc.launches;
  out.workspace = std::max(out.workspace, rc.workspace_bytes);
  out.mode += (out.mode.empty() ? "" : "; ") + s.prefix + ": " + rc.mode;
}

KernelSource finish(const EmitContext& ctx, Assembled& a, const std::vector<ir::DType>& types,
                    const std::string& what) {
  KernelSource src = begin_source(ctx, reduce::half_headers(types));
  std::ostringstream os;
  os << reduce::device_prelude() << "\nnamespace {\n\n"
     << a.dev.str() << "\n}  // namespace\n\n"
     << "// " << what << (a.mode.empty() ? "" : ": " + a.mode) << "\n"
     << ctx.signature() << " {\n";
  if (a.workspace > 0) {
    os << "  if (ctx->workspace_bytes < " << a.workspace << "ULL) return kf_fail(3, \"" << ctx.kernel.name
       << ": workspace of %zu bytes is smaller than the " << a.workspace << " it needs\", ctx->workspace_bytes);\n";
  }
  os << a.host.str() << "  return 0;\n}\n";
  src.code += os.str();
  src.launches = a.launches;
  src.workspace_bytes = a.workspace;
  return src;
}

// Stage 2: the scalar mean/sum of `count` per-sample double losses in the workspace.
void add_scalar_stage(Assembled& a, const EmitContext& ctx, int64_t count, size_t part_offset,
                      const std::string& divisor, const std::string& valid_expr, const std::string& valid_param,
                      const std::string& valid_arg) {
  const std::string K = ctx.kernel.name;
  const bool counted = !valid_expr.empty();
  const std::string B = K + "_B";
  a.dev << sum_acc(B, counted);
  reduce::Spec s;
  s.prefix = K + "_b";
  s.layout = reduce::make_layout({count}, {0});
  s.acc = B;
  s.acc_bytes = counted ? 16 : 8;
  s.elem = counted ? "double2" : "double";
  s.load = counted ? "make_double2(ls[off], (" + valid_expr + ") ? 1.0 : 0.0)" : "ls[off]";
  s.init = counted ? "a.s = 0.0; a.c = 0.0;" : "a.s = 0.0;";
  s.add = "a.add(v);";
  s.store = "out[0] = " + to_out(ctx.out_type().dtype, divisor.empty() ? "a.s" : "a.s / " + divisor) + ";";
  s.params = "const double* __restrict__ ls, " + (valid_param.empty() ? "" : valid_param + ", ") +
             ctype(ctx.out_type().dtype) + "* __restrict__ out";
  s.args =
      "reinterpret_cast<const double*>(ctx->workspace), " + (valid_arg.empty() ? "" : valid_arg + ", ") + ctx.out_ptr();
  s.workspace_offset = part_offset;
  add_reduction(a, s);
}

StatusOr<KernelSource> emit_cross_entropy(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& x = ctx.in_type(0);
  const ir::TensorType& t = ctx.in_type(1);
  const ir::TensorType& out = ctx.out_type();
  const std::string& red = node.attrs.s("reduction");
  const std::string K = ctx.kernel.name;
  const std::string CT = reduce::compute_type(x.dtype) == "double" ? "double" : "float";
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t cd = rank == 1 ? 0 : 1;
  const int64_t C = x.shape[static_cast<size_t>(cd)];
  int64_t cstride = 1;
  for (int64_t i = cd + 1; i < rank; ++i) cstride *= x.shape[static_cast<size_t>(i)];
  const int64_t samples = C == 0 ? 0 : x.numel() / C;
  const bool class_index = ir::is_integral(t.dtype);
  const double eps = node.attrs.f("label_smoothing");
  const int64_t ignore = node.attrs.i("ignore_index");
  if (out.numel() == 0) return noop_kernel(ctx);
  if (C == 0) return unsupported("cross_entropy over zero classes");
  const bool none = red == "none";
  if (!none && red != "mean" && red != "sum") return invalid_argument("cross_entropy has no reduction '" + red + "'");

  Assembled a;
  a.dev << reduce::lse_acc(K + "_L", CT);
  const std::string A = K + "_A";
  // The log-sum-exp with torch's log_softmax edge cases: a +inf logit or a NaN make the row NaN.
  const std::string lse =
      "(kf_isnan(a.l.m) || a.l.m == INFINITY ? (double)NAN : (a.l.m == -INFINITY ? -(double)INFINITY : (double)a.l.m + "
      "log(a.l.s)))";
  reduce::Spec s;
  s.prefix = K + "_a";
  s.layout = reduce::make_layout(x.shape, {cd});
  s.acc = A;
  s.init = "a.l.m = -INFINITY; a.l.s = 0.0; a.u = 0.0; a.w = 0.0;";
  s.add = "a.add(v);";
  const size_t loss_bytes = none ? 0 : reduce::align256(static_cast<size_t>(samples) * 8);
  std::string sink = none ? "out[o] = " + to_out(out.dtype, "loss") + ";" : "ls[o] = loss;";
  std::string sink_param = none ? ctype(out.dtype) + "* __restrict__ out" : "double* __restrict__ ls";
  std::string sink_arg = none ? ctx.out_ptr() : "reinterpret_cast<double*>(ctx->workspace)";
  const double one_m = 1.0 - eps;
  if (class_index) {
    // u = sum of logits (for label smoothing).
    a.dev << "struct " << A << " {\n"
          << "  " << K << "_L l;\n"
          << "  double u, w;\n"
          << "  __device__ __forceinline__ void add(" << CT << " x) { l.add(x); "
          << (eps != 0.0 ? "u += (double)x; " : "") << "}\n";
    if (CT == "float") {
      a.dev
          << "  __device__ __forceinline__ void add4(float x0, float x1, float x2, float x3) { l.add4(x0, x1, x2, x3); "
          << (eps != 0.0 ? "u += (double)x0; u += (double)x1; u += (double)x2; u += (double)x3; " : "") << "}\n";
      s.add_vec = "a.add4(v0, v1, v2, v3);";
    }
    a.dev << "  __device__ __forceinline__ void merge(const " << A << "& o) { l.merge(o.l); u += o.u; }\n"
          << "  __device__ __forceinline__ " << A << " shfl_down(int d) const { " << A
          << " r; r.l = l.shfl_down(d); r.u = __shfl_down_sync(0xffffffffu, u, d); r.w = 0.0; return r; }\n"
          << "};\n";
    s.acc_bytes = 32;
    s.elem = CT;
    s.load = load(x.dtype, CT, "in0[off]");
    std::ostringstream st;
    st << "const long long t = (long long)tgt[o]; double loss; "
       << "if (t == " << ll(ignore) << ") { loss = 0.0; } "
       << "else if (t < 0 || t >= " << ll(C) << ") { loss = (double)NAN; } "
       << "else { const double lse = " << lse << "; const double xt = (double)" << s.prefix << "_LOAD(base + t * "
       << ll(cstride) << "); ";
    if (eps == 0.0) {
      st << "loss = lse - xt; } ";
    } else {
      st << "loss = " << double_literal(one_m) << " * (lse - xt) + " << double_literal(eps / static_cast<double>(C))
         << " * (" << double_literal(static_cast<double>(C)) << " * lse - a.u); } ";
    }
    st << sink;
    s.store = st.str();
    s.params =
        "const " + ctype(x.dtype) + "* __restrict__ in0, const " + ctype(t.dtype) + "* __restrict__ tgt, " + sink_param;
    s.args = ctx.in_ptr(0) + ", " + ctx.in_ptr(1) + ", " + sink_arg;
    if (x.dtype == ir::DType::kFloat32) {
      s.vec_ptr = "in0";
      s.vec_host = ctx.in_ptr(0);
    }
  } else {
    // u = sum of smoothed targets, w = sum of smoothed target * logit.
    const std::string E = CT == "double" ? "double2" : "float2";
    a.dev << "struct " << A << " {\n"
          << "  " << K << "_L l;\n"
          << "  double u, w;\n"
          << "  __device__ __forceinline__ void add(" << E << " v) { l.add(v.x); const double tp = "
          << (eps == 0.0
                  ? "(double)v.y"
                  : "(double)v.y * " + double_literal(one_m) + " + " + double_literal(eps / static_cast<double>(C)))
          << "; u += tp; w += tp * (double)v.x; }\n"
          << "  __device__ __forceinline__ void merge(const " << A << "& o) { l.merge(o.l); u += o.u; w += o.w; }\n"
          << "  __device__ __forceinline__ " << A << " shfl_down(int d) const { " << A
          << " r; r.l = l.shfl_down(d); r.u = __shfl_down_sync(0xffffffffu, u, d); r.w = __shfl_down_sync(0xffffffffu, "
             "w, d); return r; }\n"
          << "};\n";
    s.acc_bytes = 32;
    s.elem = E;
    s.load = "make_" + E + "(" + load(x.dtype, CT, "in0[off]") + ", " + load(t.dtype, CT, "in1[off]") + ")";
    s.store = "const double lse = " + lse + "; const double loss = lse * a.u - a.w; " + sink;
    s.params =
        "const " + ctype(x.dtype) + "* __restrict__ in0, const " + ctype(t.dtype) + "* __restrict__ in1, " + sink_param;
    s.args = ctx.in_ptr(0) + ", " + ctx.in_ptr(1) + ", " + sink_arg;
  }
  s.workspace_offset = loss_bytes;
  s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  add_reduction(a, s);
  if (!none) {
    if (class_index) {
      add_scalar_stage(a, ctx, samples, loss_bytes, red == "mean" ? "a.c" : "", "tgt[off] != " + ll(ignore),
                       "const " + ctype(t.dtype) + "* __restrict__ tgt", ctx.in_ptr(1));
    } else {
      add_scalar_stage(a, ctx, samples, loss_bytes, red == "mean" ? double_literal(static_cast<double>(samples)) : "",
                       "", "", "");
    }
  }
  return finish(ctx, a, {x.dtype, t.dtype, out.dtype}, "cross_entropy, " + red);
}

}  // namespace

StatusOr<KernelSource> emit_Loss(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  if (node.op == ir::OpId::kCrossEntropy) {
    if (ctx.kernel.nodes.size() > 1)
      return unsupported("kernel " + ctx.kernel.name + ": cross_entropy takes no prologue (loss_prologue excludes it)");
    return emit_cross_entropy(ctx);
  }
  const ir::TensorType& ta = ctx.in_type(0);
  const ir::TensorType& tb = ctx.in_type(1);
  const ir::TensorType& out = ctx.out_type();
  const std::string& red = node.attrs.s("reduction");
  const std::string K = ctx.kernel.name;
  const std::string CT = reduce::compute_type(out.dtype) == "double" ? "double" : "float";
  const bool dbl = CT == "double";
  const std::string fabs_ = dbl ? "fabs" : "fabsf";
  // The elementwise loss of prediction a and target b.
  std::string body;
  switch (node.op) {
    case ir::OpId::kMseLoss: body = "const " + CT + " d = a - b; return d * d;"; break;
    case ir::OpId::kL1Loss: body = "return " + fabs_ + "(a - b);"; break;
    case ir::OpId::kSmoothL1Loss: {
      double beta = node.attrs.f("beta");
      if (beta < 0) return invalid_argument("smooth_l1_loss needs beta >= 0");
      if (beta == 0.0) {
        body = "return " + fabs_ + "(a - b);";
      } else {
        body = "const " + CT + " z = " + fabs_ + "(a - b); return z < " + lit(CT, beta) + " ? " + lit(CT, 0.5) +
               " * z * z / " + lit(CT, beta) + " : z - " + lit(CT, 0.5 * beta) + ";";
      }
      break;
    }
    case ir::OpId::kHuberLoss: {
      double delta = node.attrs.f("delta");
      if (delta <= 0) return invalid_argument("huber_loss needs delta > 0");
      body = "const " + CT + " z = " + fabs_ + "(a - b); return z < " + lit(CT, delta) + " ? " + lit(CT, 0.5) +
             " * z * z : " + lit(CT, delta) + " * (z - " + lit(CT, 0.5 * delta) + ");";
      break;
    }
    case ir::OpId::kKlDiv:
      if (node.attrs.b("log_target")) {
        body = std::string("return ") + (dbl ? "exp" : "expf") + "(b) * (b - a);";
      } else {
        body =
            std::string("return (b == (") + CT + ")0 ? (" + CT + ")0 : b * " + (dbl ? "log" : "logf") + "(b)) - b * a;";
      }
      break;
    default: return unsupported("no loss rule for " + ir::describe(ctx.graph, node));
  }
  if (red == "batchmean" && node.op != ir::OpId::kKlDiv)
    return invalid_argument("reduction 'batchmean' is for kl_div only");
  if (out.numel() == 0) return noop_kernel(ctx);

  // The broadcast shape of the two operands.
  ir::Shape bshape = ta.shape.size() >= tb.shape.size() ? ta.shape : tb.shape;
  {
    size_t r = bshape.size();
    for (size_t i = 0; i < r; ++i) {
      int64_t da = i < r - ta.shape.size() ? 1 : ta.shape[i - (r - ta.shape.size())];
      int64_t db = i < r - tb.shape.size() ? 1 : tb.shape[i - (r - tb.shape.size())];
      bshape[i] = da == 1 ? db : da;
    }
  }
  const int64_t n = ir::TensorType{bshape, ir::DType::kFloat32}.numel();
  Assembled a;
  a.dev << "__device__ __forceinline__ " << CT << " " << K << "_elem(" << CT << " a, " << CT << " b) { " << body
        << " }\n";
  // A pointwise prologue (the loss_prologue skill): the prediction is computed where the loss reads it,
  // from the chain's own operands, and never stored. The target is then `in_b` (the chain's operands
  // are named in<value>).
  const std::vector<int> prologue(ctx.kernel.nodes.begin(), ctx.kernel.nodes.end() - 1);
  PointwiseFunction pf;
  std::optional<LaneFunction> lanes;
  if (!prologue.empty()) {
    if (ctx.graph.nodes()[static_cast<size_t>(prologue.back())].output != node.inputs[0])
      return internal_error("kernel " + K + ": the prologue does not make the loss's prediction");
    KF_ASSIGN_OR_RETURN(pf, pointwise_function(ctx, prologue, K + "_prologue"));
    a.dev << "// The prediction's chain, computed where the loss reads it:\n" << pf.code;
    lanes = pointwise_lane_function(ctx, prologue, K + "_prologue_lanes");
    if (lanes && lanes->lane_values.size() == 1) a.dev << lanes->code;
  }
  const std::string b_name = prologue.empty() ? "in1" : "in_b";
  const std::string pa = (prologue.empty() ? "const " + ctype(ta.dtype) + "* __restrict__ in0"
                                           : (pf.params.empty() ? std::string("") : pf.params)) +
                         (prologue.empty() || !pf.params.empty() ? ", " : "") + "const " + ctype(tb.dtype) +
                         "* __restrict__ " + b_name;
  const std::string args = (prologue.empty() ? ctx.in_ptr(0) : pf.host_args) +
                           (prologue.empty() || !pf.host_args.empty() ? ", " : "") + ctx.in_ptr(1);
  auto elem_at = [&](const std::string& i) {
    const std::string at = broadcast_offset(ta.shape, bshape, i);
    const std::string pred = prologue.empty()
                                 ? "in0[" + at + "]"
                                 : K + "_prologue(" + at + (pf.call_args.empty() ? "" : ", " + pf.call_args) + ")";
    return K + "_elem(" + load(ta.dtype, CT, pred) + ", " +
           load(tb.dtype, CT, b_name + "[" + broadcast_offset(tb.shape, bshape, i) + "]") + ")";
  };
  if (red == "none") {
    const int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
    a.dev << "__global__ void __launch_bounds__(" << block << ") " << K << "_none(" << pa << ", " << ctype(out.dtype)
          << "* __restrict__ out) {\n"
          << "  KF_GRID_STRIDE(i, " << ll(n) << ") { out[i] = " << to_out(out.dtype, elem_at("i")) << "; }\n"
          << "}\n";
    a.host << "  " << K << "_none<<<kf_grid(" << ll(n) << ", " << block << "), " << block << ", 0, ctx->stream>>>("
           << args << ", " << ctx.out_ptr() << ");\n"
           << "  KF_LAUNCHED();\n";
    a.launches = 1;
    return finish(ctx, a, {ta.dtype, tb.dtype, out.dtype}, std::string(ir::op_info(node.op).name) + ", none");
  }
  double divisor = 1.0;
  if (red == "mean") {
    divisor = static_cast<double>(n);
  } else if (red == "batchmean") {
    divisor = ta.shape.empty() ? 1.0 : static_cast<double>(ta.shape[0]);
  } else if (red != "sum") {
    return invalid_argument(std::string(ir::op_info(node.op).name) + " has no reduction '" + red + "'");
  }
  a.dev << sum_acc(K + "_S", false);
  reduce::Spec s;
  s.prefix = K + "_r";
  s.layout = reduce::make_layout({n}, {0});
  s.acc = K + "_S";
  s.acc_bytes = 8;
  s.elem = "double";
  s.load = "(double)" + elem_at("(off)");
  s.init = "a.s = 0.0;";
  s.add = "a.add(v);";
  s.store = "out[0] = " + to_out(out.dtype, divisor == 1.0 ? "a.s" : "a.s / " + double_literal(divisor)) + ";";
  s.params = pa + ", " + ctype(out.dtype) + "* __restrict__ out";
  s.args = args + ", " + ctx.out_ptr();
  s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  if (ta.shape == bshape && tb.shape == bshape && ta.dtype == ir::DType::kFloat32 && tb.dtype == ir::DType::kFloat32 &&
      CT == "float") {
    // Both operands read at the element's own offset: 16-byte loads of each (of the prologue's one
    // full-shape operand in place of the prediction, when there is a prologue).
    if (prologue.empty()) {
      s.vec_ptr = "in0";
      s.vec_host = ctx.in_ptr(0);
      s.vec_value = K + "_elem(V0, V1)";
    } else if (lanes && lanes->lane_values.size() == 1) {
      s.vec_ptr = "in" + std::to_string(lanes->lane_values[0]);
      s.vec_host = ctx.ptr(lanes->lane_values[0], false);
      s.vec_value = K + "_elem(" + K + "_prologue_lanes(V0), V1)";
    }
    if (!s.vec_ptr.empty()) {
      s.vec_ptr2 = b_name;
      s.vec_host2 = ctx.in_ptr(1);
      // A vector's four float losses summed in float, then added once in double.
      s.vec_elem = "float";
      s.add_vec = "a.s += (double)((v0 + v1) + (v2 + v3));";
    }
  }
  add_reduction(a, s);
  return finish(ctx, a, {ta.dtype, tb.dtype, out.dtype}, std::string(ir::op_info(node.op).name) + ", " + red);
}

StatusOr<KernelSource> emit_TripletLoss(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& ta = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  const std::string& red = node.attrs.s("reduction");
  const std::string K = ctx.kernel.name;
  const std::string CT = reduce::compute_type(out.dtype) == "double" ? "double" : "float";
  const bool dbl = CT == "double";
  const double p = node.attrs.f("p");
  const double margin = node.attrs.f("margin");
  const double eps = node.attrs.f("eps");
  const bool swap = node.attrs.b("swap");
  if (std::isnan(p)) return unsupported("triplet_margin_loss with p = nan is undefined");
  if (out.numel() == 0) return noop_kernel(ctx);
  const bool none = red == "none";
  if (!none && red != "mean" && red != "sum")
    return invalid_argument("triplet_margin_loss has no reduction '" + red + "'");
  const int64_t rank = static_cast<int64_t>(ta.shape.size());
  const int64_t D = rank == 0 ? 1 : ta.shape.back();
  const int64_t samples = D == 0 ? out.numel() : ta.numel() / D;
  const std::string fabs_ = dbl ? "fabs" : "fabsf";

  // One p-norm accumulator per distance: F (its type), update, merge, final value.
  std::string F, upd, mrg, fin, ident;
  if (std::isinf(p)) {
    std::string cmp = p > 0 ? ">" : "<";
    F = CT;
    upd = "const " + CT + " ad = " + fabs_ + "(d); if (ad " + cmp + " f || kf_isnan(ad)) f = ad;";
    mrg = "if (g " + cmp + " f || kf_isnan(g)) f = g;";
    fin = "(double)f";
    ident = p > 0 ? "0" : "INFINITY";
  } else {
    F = "double";
    mrg = "f += g;";
    ident = "0.0";
    if (p == 2.0) {
      upd = "f += (double)d * (double)d;";
      fin = "sqrt(f)";
    } else if (p == 1.0) {
      upd = "f += (double)" + fabs_ + "(d);";
      fin = "f";
    } else if (p == 0.0) {
      upd = "f += (d != (" + CT + ")0) ? 1.0 : 0.0;";
      fin = "f";
    } else {
      upd = "f += (double)" + std::string(dbl ? "pow" : "powf") + "(" + fabs_ + "(d), " + lit(CT, p) + ");";
      fin = "pow(f, " + double_literal(1.0 / p) + ")";
    }
  }
  const int nd = swap ? 3 : 2;
  const std::string A = K + "_A";
  const std::string E = K + "_E";
  Assembled a;
  a.dev << "struct " << E << " { " << CT << " a, p, n; };\n"
        << "__device__ __forceinline__ void " << K << "_upd(" << F << "& f, " << CT << " d) { " << upd << " }\n"
        << "__device__ __forceinline__ void " << K << "_mrg(" << F << "& f, " << F << " g) { " << mrg << " }\n"
        << "__device__ __forceinline__ double " << K << "_fin(" << F << " f) { return " << fin << "; }\n"
        << "struct " << A << " {\n"
        << "  " << F << " f[" << nd << "];\n"
        << "  __device__ __forceinline__ void add(const " << E << "& v) {\n"
        << "    const " << CT << " e = " << lit(CT, eps) << ";\n"
        << "    " << K << "_upd(f[0], v.a - v.p + e);\n"
        << "    " << K << "_upd(f[1], v.a - v.n + e);\n"
        << (swap ? "    " + K + "_upd(f[2], v.p - v.n + e);\n" : "") << "  }\n"
        << "  __device__ __forceinline__ void merge(const " << A << "& o) { for (int k = 0; k < " << nd << "; ++k) "
        << K << "_mrg(f[k], o.f[k]); }\n"
        << "  __device__ __forceinline__ " << A << " shfl_down(int d) const { " << A << " r; for (int k = 0; k < " << nd
        << "; ++k) r.f[k] = __shfl_down_sync(0xffffffffu, f[k], d); return r; }\n"
        << "};\n";
  const size_t loss_bytes = none ? 0 : reduce::align256(static_cast<size_t>(samples) * 8);
  reduce::Spec s;
  s.prefix = K + "_a";
  s.layout = rank == 0 ? reduce::make_layout({1}, {0}) : reduce::make_layout(ta.shape, {rank - 1});
  s.acc = A;
  s.acc_bytes = 8 * nd;
  s.elem = E;
  const std::string T = ctype(ta.dtype);
  auto ld = [&](const std::string& ptr) { return load(ctx.in_type(0).dtype, CT, ptr + "[off]"); };
  s.load = E + "{" + ld("in0") + ", " + ld("in1") + ", " + ld("in2") + "}";
  s.init = "for (int k = 0; k < " + std::to_string(nd) + "; ++k) a.f[k] = " + ident + ";";
  s.add = "a.add(v);";
  std::ostringstream st;
  // Distances and the hinge in the tensor's precision, as torch computes them.
  st << "const " << CT << " dp = (" << CT << ")" << K << "_fin(a.f[0]); " << CT << " dn = (" << CT << ")" << K
     << "_fin(a.f[1]); ";
  if (swap)
    st << "const " << CT << " ds = (" << CT << ")" << K << "_fin(a.f[2]); dn = (kf_isnan(dn) || kf_isnan(ds)) ? (" << CT
       << ")NAN : (ds < dn ? ds : dn); ";
  st << "const " << CT << " h = " << lit(CT, margin) << " + dp - dn; const " << CT << " loss = kf_isnan(h) ? h : (h > ("
     << CT << ")0 ? h : (" << CT << ")0); ";
  st << (none ? "out[o] = " + to_out(out.dtype, "loss") + ";" : "ls[o] = (double)loss;");
  s.store = st.str();
  s.params = "const " + T + "* __restrict__ in0, const " + T + "* __restrict__ in1, const " + T +
             "* __restrict__ in2, " +
             (none ? ctype(out.dtype) + "* __restrict__ out" : std::string("double* __restrict__ ls"));
  s.args = ctx.in_ptr(0) + ", " + ctx.in_ptr(1) + ", " + ctx.in_ptr(2) + ", " +
           (none ? ctx.out_ptr() : std::string("reinterpret_cast<double*>(ctx->workspace)"));
  s.workspace_offset = loss_bytes;
  s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  add_reduction(a, s);
  if (!none) {
    add_scalar_stage(a, ctx, samples, loss_bytes, red == "mean" ? double_literal(static_cast<double>(samples)) : "", "",
                     "", "");
  }
  return finish(ctx, a, {ta.dtype, out.dtype}, "triplet_margin_loss, " + red);
}

}  // namespace kforge::codegen
