// Norm family: batch_norm, instance_norm, group_norm, layer_norm. Batch statistics come from one of
// the shared reduction kernels (reduce_common.h): sums of values shifted by the group's first
// element, accumulated in double (no cancellation, order-independent merges), giving the mean and
// the biased variance; they land in ctx->workspace as (mean, 1/sqrt(var + eps)) per group. Running
// statistics (eval-mode batch_norm, instance_norm without input stats) are read directly. One
// elementwise pass then writes (x - mean) * rstd * weight + bias.
#include <algorithm>
#include <sstream>

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

}  // namespace

// The norm of ctx's kernel; with `post` (the norm_epilogue skill) the apply pass writes post(i, value).
StatusOr<KernelSource> emit_norm_kernel(const EmitContext& ctx, const PointwiseFunction* post) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& in = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  const ir::Shape& shape = in.shape;
  const int64_t numel = out.numel();
  if (numel == 0) {
    KernelSource src = begin_source(ctx);
    src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
    src.launches = 0;
    return src;
  }
  const std::string K = ctx.kernel.name;
  const std::string CT = in.dtype == ir::DType::kFloat64 ? "double" : "float";
  const double eps = node.attrs.f("eps");
  const std::string eps_lit = double_literal(eps);

  // How elements map to statistics groups and to affine parameters.
  int64_t N = shape[0];
  int64_t C = shape.size() >= 2 ? shape[1] : 1;
  int64_t HW = 1;
  for (size_t i = 2; i < shape.size(); ++i) HW *= shape[i];
  bool batch_stats = false;  // statistics computed here (else running statistics)
  reduce::Layout layout;
  std::string group_of;   // expression of element index i: the statistics group
  std::string affine_of;  // expression of i: the weight/bias index
  int64_t period = 1;     // runs of this many consecutive elements share their group and affine index
  int64_t groups = 0;
  switch (node.op) {
    case ir::OpId::kBatchNorm: {
      batch_stats = node.attrs.b("training");
      std::vector<int64_t> dims = {0};
      for (size_t i = 2; i < shape.size(); ++i) dims.push_back(static_cast<int64_t>(i));
      layout = reduce::make_layout(shape, dims);
      groups = C;
      group_of = "((i / " + ll(HW) + ") % " + ll(C) + ")";
      affine_of = group_of;
      period = HW;
      break;
    }
    case ir::OpId::kInstanceNorm: {
      batch_stats = node.attrs.b("use_input_stats");
      layout = reduce::make_layout({N * C, HW}, {1});
      groups = batch_stats ? N * C : C;
      group_of = batch_stats ? "(i / " + ll(HW) + ")" : "((i / " + ll(HW) + ") % " + ll(C) + ")";
      affine_of = "((i / " + ll(HW) + ") % " + ll(C) + ")";
      period = HW;
      break;
    }
    case ir::OpId::kGroupNorm: {
      batch_stats = true;
      int64_t G = node.attrs.i("num_groups");
      int64_t per = C / G * HW;
      layout = reduce::make_layout({N * G, per}, {1});
      groups = N * G;
      group_of = "(i / " + ll(per) + ")";
      affine_of = "((i / " + ll(HW) + ") % " + ll(C) + ")";
      period = HW;
      break;
    }
    case ir::OpId::kLayerNorm: {
      batch_stats = true;
      int64_t D = 1;
      for (auto d : node.attrs.ints("normalized_shape")) D *= d;
      int64_t rows = D == 0 ? 0 : numel / D;
      layout = reduce::make_layout({rows, D}, {1});
      groups = rows;
      group_of = "(i / " + ll(D) + ")";
      affine_of = "(i % " + ll(D) + ")";
      period = ctx.has_input(1) || ctx.has_input(2) ? 1 : D;
      break;
    }
    default: return unsupported("no normalization rule for " + ir::describe(ctx.graph, node));
  }
  const bool has_w = ctx.has_input(1), has_b = ctx.has_input(2);
  const bool running = !batch_stats;
  if (running && (!ctx.has_input(3) || !ctx.has_input(4))) {
    return invalid_argument(std::string(ir::op_info(node.op).name) +
                            " without batch statistics needs running_mean and running_var (torch raises)");
  }

  // Layer norm over short float32 rows (D a multiple of 4, at most 1024), and group or instance norm
  // whose groups are such rows (a group's channels and positions are contiguous): a group of L lanes
  // holds a row in registers (16-byte loads), the mean and then the sum of squared deviations from it
  // come from shuffles within the group, and the normalized row (through the epilogue) is written from
  // the same registers: one read and one write. The statistics kernel wrote 16 bytes of statistics per
  // row, which for level2/3's rows of 64 was a quarter of the input again, written and then read back.
  const bool rows_of_groups = node.op == ir::OpId::kLayerNorm || node.op == ir::OpId::kGroupNorm ||
                              (node.op == ir::OpId::kInstanceNorm && batch_stats);
  if (rows_of_groups && in.dtype == ir::DType::kFloat32 && out.dtype == ir::DType::kFloat32 && layout.N % 4 == 0 &&
      layout.N >= 4 && layout.N <= 1024 && ctx.kernel.knob(schedule::Knob::kRowsInRegisters, 1) != 0 &&
      (!has_w || ctx.in_type(1).dtype == ir::DType::kFloat32) &&
      (!has_b || ctx.in_type(2).dtype == ir::DType::kFloat32)) {
    const int64_t D = layout.N, D4 = D / 4, rows = layout.M;
    int64_t L = 1;
    while (L < D4 && L < 32) L *= 2;
    const int64_t V = (D4 + L - 1) / L;
    const int64_t groups_per_block = 256 / L;
    const int64_t blocks = std::min<int64_t>((rows + groups_per_block - 1) / groups_per_block, 132 * 16);
    std::ostringstream prm, arg;
    prm << "const float* __restrict__ x";
    arg << ctx.in_ptr(0);
    if (has_w) prm << ", const float* __restrict__ p1", arg << ", " << ctx.in_ptr(1);
    if (has_b) prm << ", const float* __restrict__ p2", arg << ", " << ctx.in_ptr(2);
    if (post != nullptr && !post->params.empty()) prm << ", " << post->params, arg << ", " << post->host_args;
    prm << ", float* __restrict__ y";
    arg << ", " << ctx.out_ptr();
    auto lane_value = [&](const char* l, int off) {
      std::string v = "(v[k]." + std::string(l) + " - mean) * rstd";
      const std::string c = "c + " + std::to_string(off);
      // The parameters' index: layer norm's is the position in the row; a group or instance norm's is
      // the channel of the element.
      const std::string a =
          node.op == ir::OpId::kLayerNorm ? c : "((row * " + ll(D) + " + " + c + ") / " + ll(HW) + ") % " + ll(C);
      if (has_w) v = "(" + v + ") * p1[" + a + "]";
      if (has_b) v = "(" + v + ") + p2[" + a + "]";
      if (post != nullptr)
        v = K + "_post(row * " + ll(D) + " + " + c + ", " + v +
            (post->call_args.empty() ? "" : ", " + post->call_args) + ")";
      return v;
    };
    std::ostringstream os;
    os << "namespace {\n\n"
       << (post != nullptr ? "// The epilogue (norm_epilogue skill), computed on each normalized value:\n" + post->code
                           : "")
       << "__global__ void __launch_bounds__(256) " << K << "_rows(" << prm.str() << ") {\n"
       << "  constexpr long long ROWS = " << ll(rows) << ", D = " << ll(D) << ";\n"
       << "  constexpr int L = " << L << ", V = " << V << ", D4 = " << D4 << ";  // lanes per row, vectors per lane\n"
       << "  const int sub = threadIdx.x % L;\n"
       << "  const long long stride = (long long)gridDim.x * (256 / L);\n"
       << "  // Every lane of a warp runs the same iterations (the shuffles need them all).\n"
       << "  for (long long row = (long long)blockIdx.x * (256 / L) + threadIdx.x / L; row - threadIdx.x % 32 / L < "
          "ROWS;\n"
       << "       row += stride) {\n"
       << "    const bool live = row < ROWS;\n"
       << "    const float4* xr = reinterpret_cast<const float4*>(x + (live ? row : 0) * D);\n"
       << "    float4 v[V];\n"
       << "    float s = 0.0f;\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < V; ++k) {\n"
       << "      const int j = sub + L * k;\n"
       << "      v[k] = live && j < D4 ? xr[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
       << "      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);\n"
       << "    }\n"
       << "#pragma unroll\n"
       << "    for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o, L);\n"
       << "    const float mean = s / (float)D;\n"
       << "    float q = 0.0f;\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < V; ++k) {\n"
       << "      if (sub + L * k < D4) {\n"
       << "        const float a = v[k].x - mean, b = v[k].y - mean, c = v[k].z - mean, d = v[k].w - mean;\n"
       << "        q += (a * a + b * b) + (c * c + d * d);\n"
       << "      }\n"
       << "    }\n"
       << "#pragma unroll\n"
       << "    for (int o = L / 2; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o, L);\n"
       << "    const float rstd = rsqrtf(q / (float)D + " << float_literal(eps) << ");\n"
       << "    if (!live) continue;\n"
       << "    float4* yr = reinterpret_cast<float4*>(y + row * D);\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < V; ++k) {\n"
       << "      const int j = sub + L * k;\n"
       << "      if (j >= D4) continue;\n"
       << "      const int c = 4 * j;\n"
       << "      (void)c;\n"
       << "      float4 r;\n"
       << "      r.x = " << lane_value("x", 0) << ";\n"
       << "      r.y = " << lane_value("y", 1) << ";\n"
       << "      r.z = " << lane_value("z", 2) << ";\n"
       << "      r.w = " << lane_value("w", 3) << ";\n"
       << "      yr[j] = r;\n"
       << "    }\n"
       << "  }\n"
       << "}\n\n"
       << "}  // namespace\n\n"
       << "// rows in registers: " << L << " lanes per row of " << D << "\n"
       << ctx.signature() << " {\n"
       << "  if (((reinterpret_cast<uintptr_t>(" << ctx.in_ptr(0) << ") | reinterpret_cast<uintptr_t>(" << ctx.out_ptr()
       << ")) & 15) != 0) return kf_fail(3, \"" << K << ": the rows kernel needs 16-byte aligned tensors\");\n"
       << "  " << K << "_rows<<<" << blocks << "u, 256, 0, ctx->stream>>>(" << arg.str() << ");\n"
       << "  KF_LAUNCHED();\n"
       << "  return 0;\n"
       << "}\n";
    KernelSource src = begin_source(ctx);
    src.code += os.str();
    src.launches = 1;
    return src;
  }

  std::vector<ir::DType> types = {in.dtype, out.dtype};
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    if (ctx.has_input(k)) types.push_back(ctx.in_type(k).dtype);
  }
  KernelSource src = begin_source(ctx, reduce::half_headers(types));
  std::ostringstream dev, host;
  int64_t launches = 0;
  size_t workspace = 0;
  // float: (mean rounded to float, the rest of the mean, rstd, unused), so x - mean keeps the
  // double-accumulated mean's accuracy; double: (mean, rstd).
  const std::string stats_t = CT == "double" ? "double2" : "float4";
  const std::string stats_host = "reinterpret_cast<" + stats_t + "*>(ctx->workspace)";
  std::string mode = "running statistics";

  if (batch_stats) {
    // Statistics: (mean, rstd) per group into the start of the workspace, partials after them.
    const std::string A = K + "_A";
    dev << "struct " << A << " {\n"
        << "  double k, s1, s2;\n"
        << "  __device__ __forceinline__ void add(" << CT
        << " x) { const double e = (double)x - k; s1 += e; s2 += e * e; }\n"
        << "  __device__ __forceinline__ void merge(const " << A << "& o) { s1 += o.s1; s2 += o.s2; }\n"
        << "  __device__ __forceinline__ " << A << " shfl_down(int d) const {\n"
        << "    " << A << " r;\n"
        << "    r.k = __shfl_down_sync(0xffffffffu, k, d);\n"
        << "    r.s1 = __shfl_down_sync(0xffffffffu, s1, d);\n"
        << "    r.s2 = __shfl_down_sync(0xffffffffu, s2, d);\n"
        << "    return r;\n"
        << "  }\n"
        << "};\n";
    reduce::Spec s;
    s.prefix = K + "_st";
    s.layout = layout;
    s.acc = A;
    s.acc_bytes = 24;
    s.elem = CT;
    s.load = load(in.dtype, CT, "in0[off]");
    s.init = "a.s1 = 0.0; a.s2 = 0.0; a.k = (double)" + s.prefix + "_LOAD(base);";
    s.add = "a.add(v);";
    const std::string n = double_literal(static_cast<double>(layout.N));
    s.store =
        "const double mu = a.s1 / " + n + "; double var = a.s2 / " + n +
        " - mu * mu; var = var < 0.0 ? 0.0 : var; const double mean = a.k + mu; const double rstd = 1.0 / sqrt(var + " +
        eps_lit + "); ";
    if (CT == "double") {
      s.store += "stats[o] = make_double2(mean, rstd);";
    } else {
      s.store +=
          "const float hi = (float)mean; stats[o] = make_float4(hi, (float)(mean - (double)hi), (float)rstd, 0.0f);";
    }
    s.params = "const " + ctype(in.dtype) + "* __restrict__ in0, " + stats_t + "* __restrict__ stats";
    s.args = ctx.in_ptr(0) + ", " + stats_host;
    if (in.dtype == ir::DType::kFloat32) {
      s.vec_ptr = "in0";
      s.vec_host = ctx.in_ptr(0);
    }
    s.workspace_offset = reduce::align256(static_cast<size_t>(groups) * 16);
    s.block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
    reduce::Code rc = reduce::emit(s);
    dev << rc.device;
    workspace = std::max(rc.workspace_bytes, s.workspace_offset);
    host << "  if (ctx->workspace_bytes < " << workspace << "ULL) return kf_fail(3, \"" << K
         << ": workspace of %zu bytes is smaller than the " << workspace << " it needs\", ctx->workspace_bytes);\n"
         << rc.host;
    launches += rc.launches;
    mode = "batch statistics: " + rc.mode;
  }

  // The normalization pass.
  std::ostringstream params, args;
  params << "const " << ctype(in.dtype) << "* __restrict__ x";
  args << ctx.in_ptr(0);
  for (size_t k = 1; k <= 4; ++k) {
    if (!ctx.has_input(k)) continue;
    if (k >= 3 && !running) continue;
    params << ", const " << ctype(ctx.in_type(k).dtype) << "* __restrict__ p" << k;
    args << ", " << ctx.in_ptr(k);
  }
  if (batch_stats) {
    params << ", const " << stats_t << "* __restrict__ stats";
    args << ", " << stats_host;
  }
  if (post != nullptr && !post->params.empty()) {
    params << ", " << post->params;
    args << ", " << post->host_args;
    dev << "// The epilogue (norm_epilogue skill), computed on each normalized value before its store:\n" << post->code;
  }
  params << ", " << ctype(out.dtype) << "* __restrict__ y";
  args << ", " << ctx.out_ptr();
  // The stored value of element `idx` normalized to `v`.
  auto stored = [&](const std::string& idx, const std::string& v, const std::string& i_row = "") {
    if (post == nullptr) return to_out(out.dtype, v);
    return K + "_post(" + idx + ", " + v + (post->call_args.empty() ? "" : ", " + post->call_args) +
           (i_row.empty() ? "" : ", " + i_row) + ")";
  };
  if (post != nullptr && post->params.empty())
    dev << "// The epilogue (norm_epilogue skill), computed on each normalized value before its store:\n" << post->code;
  const int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  // The statements that normalize element x_expr (its group and affine index from i) into `v`.
  auto normalize = [&](const std::string& x_expr, const std::string& ind) {
    std::ostringstream b;
    b << ind << "const long long g = " << group_of << ";\n" << ind << "(void)g;\n";
    std::string centered = "(" + x_expr + " - mean)";
    if (batch_stats && CT == "double") {
      b << ind << "const double2 st = stats[g];\n" << ind << "const double mean = st.x, rstd = st.y;\n";
    } else if (batch_stats) {
      b << ind << "const float4 st = stats[g];\n" << ind << "const float mean = st.x, mean_lo = st.y, rstd = st.z;\n";
      centered = "((" + x_expr + " - mean) - mean_lo)";
    } else {
      b << ind << "const " << CT << " mean = " << load(ctx.in_type(3).dtype, CT, "p3[g]") << ";\n"
        << ind << "const " << CT << " rstd = (" << CT << ")1 / sqrt(" << load(ctx.in_type(4).dtype, CT, "p4[g]")
        << " + (" << CT << ")" << eps_lit << ");\n";
    }
    if (has_w || has_b) b << ind << "const long long c = " << affine_of << ";\n";
    if (has_w) b << ind << "const " << CT << " w = " << load(ctx.in_type(1).dtype, CT, "p1[c]") << ";\n";
    if (has_b) b << ind << "const " << CT << " bb = " << load(ctx.in_type(2).dtype, CT, "p2[c]") << ";\n";
    return std::make_pair(b.str(), centered);
  };
  auto finish = [&](const std::string& centered) {
    std::string v = centered + " * rstd";
    if (has_w) v = "(" + v + ") * w";
    if (has_b) v = "(" + v + ") + bb";
    return v;
  };
  {
    auto [pre, centered] = normalize(load(in.dtype, CT, "x[i]"), "    ");
    dev << "__global__ void __launch_bounds__(" << block << ") " << K << "_apply(" << params.str() << ") {\n"
        << "  KF_GRID_STRIDE(i, " << ll(numel) << ") {\n"
        << pre << "    const " << CT << " v = " << finish(centered) << ";\n"
        << "    y[i] = " << stored("i", "v") << ";\n"
        << "  }\n"
        << "}\n";
  }
  // float32 with runs of a multiple of 4 elements sharing their group and parameters: one 16-byte
  // load and store per thread, one tile of `block` vectors per block (the elementwise kernel's shape).
  const bool vec = in.dtype == ir::DType::kFloat32 && out.dtype == ir::DType::kFloat32 && period % 4 == 0 &&
                   numel % 4 == 0 && numel / 4 / block < 2147483647LL &&
                   ctx.kernel.knob(schedule::Knob::kVector, 1) != 0;
  if (vec) {
    auto [pre, centered] = normalize("X", "  ");
    // The four values lie in one row of the epilogue's (row_extent % 4 == 0, i % 4 == 0).
    const bool row_indexed = post != nullptr && post->row_extent > 0 && post->row_extent % 4 == 0;
    if (row_indexed)
      pre += "  const long long i_row = i / " + ll(post->row_extent) + " * " + ll(post->row_extent) + ";\n";
    std::string lanes;
    int lane = 0;
    for (const char* l : {"x", "y", "z", "w"}) {
      std::string c = centered;
      c.replace(c.find("X"), 1, std::string("xv.") + l);
      lanes +=
          "  r." + std::string(l) + " = " +
          (post == nullptr ? finish(c) : stored("i + " + std::to_string(lane), finish(c), row_indexed ? "i_row" : "")) +
          ";\n";
      ++lane;
    }
    dev << "__global__ void __launch_bounds__(" << block << ") " << K << "_apply4(" << params.str() << ") {\n"
        << "  const long long q = (long long)blockIdx.x * " << block << " + threadIdx.x;\n"
        << "  if (q >= " << ll(numel / 4) << ") return;\n"
        << "  const long long i = q * 4;\n"
        << pre << "  const float4 xv = reinterpret_cast<const float4*>(x)[q];\n"
        << "  float4 r;\n"
        << lanes << "  reinterpret_cast<float4*>(y)[q] = r;\n"
        << "}\n";
    host << "  if (((reinterpret_cast<uintptr_t>(" << ctx.in_ptr(0) << ") | reinterpret_cast<uintptr_t>("
         << ctx.out_ptr() << ")) & 15) == 0) {\n"
         << "    " << K << "_apply4<<<" << (numel / 4 + block - 1) / block << "u, " << block << ", 0, ctx->stream>>>("
         << args.str() << ");\n"
         << "  } else {\n"
         << "    " << K << "_apply<<<kf_grid(" << ll(numel) << ", " << block << "), " << block << ", 0, ctx->stream>>>("
         << args.str() << ");\n"
         << "  }\n"
         << "  KF_LAUNCHED();\n";
  } else {
    host << "  " << K << "_apply<<<kf_grid(" << ll(numel) << ", " << block << "), " << block << ", 0, ctx->stream>>>("
         << args.str() << ");\n"
         << "  KF_LAUNCHED();\n";
  }
  launches += 1;

  std::ostringstream os;
  os << reduce::device_prelude() << "\nnamespace {\n\n"
     << dev.str() << "\n}  // namespace\n\n"
     << "// " << mode << "\n"
     << ctx.signature() << " {\n"
     << host.str() << "  return 0;\n}\n";
  src.code += os.str();
  src.launches = launches;
  src.workspace_bytes = workspace;
  return src;
}

StatusOr<KernelSource> emit_Norm(const EmitContext& ctx) {
  return emit_norm_kernel(ctx, nullptr);
}

StatusOr<KernelSource> emit_norm_epilogue(const EmitContext& ctx) {
  const ir::Graph& g = ctx.graph;
  const int norm_node = ctx.kernel.nodes.front();
  const ir::ValueIndex norm_out = g.nodes()[static_cast<size_t>(norm_node)].output;
  const ir::ValueIndex result = ctx.node().output;
  if (g.type(norm_out).shape != g.type(result).shape || g.type(norm_out).dtype != g.type(result).dtype)
    return internal_error("kernel " + ctx.kernel.name + ": the epilogue's result is not the norm's shape and dtype");
  schedule::Kernel norm_kernel = ctx.kernel;
  norm_kernel.nodes = {norm_node};
  EmitContext norm_ctx(ctx, norm_kernel);
  norm_ctx.out_value = result;
  const std::vector<int> chain(ctx.kernel.nodes.begin() + 1, ctx.kernel.nodes.end());
  // Rows of the result: one (sample, channel) plane, whose per-channel operands the 16-byte apply pass
  // reads once for its four values.
  const ir::Shape& shape = g.type(norm_out).shape;
  int64_t plane = 1;
  for (size_t d = 2; d < shape.size(); ++d) plane *= shape[d];
  KF_ASSIGN_OR_RETURN(PointwiseFunction post,
                      pointwise_function(ctx, chain, ctx.kernel.name + "_post", norm_out, plane % 4 == 0 ? plane : 0));
  return emit_norm_kernel(norm_ctx, &post);
}

}  // namespace kforge::codegen
