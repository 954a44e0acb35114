// Pooling families over the 1, 2 or 3 trailing spatial dims (all leading dims are independent
// planes): max_pool / avg_pool with torch's window conventions, and adaptive_avg_pool /
// adaptive_max_pool with torch's adaptive windows. Shapes and window parameters are baked in.
//
// The index conventions follow ATen's CUDA kernels (max_pool_forward_nchw, avg_pool2d_out_cuda_frame,
// avg_pool3d_cuda_update_output, adaptive_average_pool, adaptive_max_pool):
//   max:  window start s = o*stride - pad, elements s + k*dilation for k < kernel that fall inside
//         [0, in); initial value -inf; `if (v > m || isnan(v)) m = v` (NaN propagates).
//   avg:  s = o*stride - pad, e = min(s + kernel, in + pad); pool_size = prod(e - s) (what
//         count_include_pad divides by: padding counts, the ceil_mode overhang past in + pad does
//         not); then s = max(s, 0), e = min(e, in); an empty window gives 0; sum in order (first
//         spatial dim outermost) in the accumulate type, divided by divisor_override, pool_size or
//         prod(e - s) (count_include_pad=False).
//   adaptive: per dim start = floor(o*in/out), end = ceil((o+1)*in/out); avg = sum / len_0 / len_1 ...
//         (torch divides by each extent in turn).
// Large adaptive windows (global pooling) use a warp or a whole block per output with a shuffle
// reduction instead of one thread looping over the window.
#include <algorithm>
#include <climits>
#include <optional>
#include <sstream>

#include "codegen/emit.h"

namespace kforge::codegen {

namespace {

using ir::DType;
using ir::Shape;

bool is_half(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16;
}

std::string half_headers(DType t) {
  return is_half(t) ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "";
}

// Accumulate type: float for 16- and 32-bit floats, double for float64 (torch's accscalar_t).
std::string acc_type(DType t) {
  return t == DType::kFloat64 ? "double" : "float";
}

std::string store_expr(const std::string& v, DType t) {
  if (t == DType::kFloat16) return "__float2half(" + v + ")";
  if (t == DType::kBFloat16) return "__float2bfloat16(" + v + ")";
  return "(" + ctype(t) + ")(" + v + ")";
}

std::string load_expr(const std::string& v, DType t, const std::string& T) {
  return is_half(t) ? "(" + T + ")(float)(" + v + ")" : "(" + T + ")(" + v + ")";
}

int64_t prod(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t d = from; d < std::min(to, s.size()); ++d) p *= s[d];
  return p;
}

struct Index {
  bool wide = true;
  std::string type() const { return wide ? "int64_t" : "int"; }
  std::string lit(int64_t v) const { return wide ? std::to_string(v) + "LL" : std::to_string(v); }
};

Index index_for(int64_t max_elems) {
  return Index{max_elems >= static_cast<int64_t>(INT_MAX) / 2};
}

KernelSource empty_kernel(const EmitContext& ctx) {
  KernelSource src = begin_source(ctx);
  src.code += ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

// The geometry shared by both families: planes of `in_sp` spatial elements in, `out_sp` out.
struct PoolGeom {
  size_t sp = 0;
  int64_t planes = 0;
  Shape in_sp, out_sp;
  int64_t in_plane = 1, out_plane = 1;
};

PoolGeom geometry(const EmitContext& ctx, size_t sp) {
  PoolGeom g;
  const Shape& in = ctx.in_type(0).shape;
  const Shape& out = ctx.out_type().shape;
  g.sp = sp;
  g.in_sp.assign(in.end() - static_cast<long>(sp), in.end());
  g.out_sp.assign(out.end() - static_cast<long>(sp), out.end());
  g.in_plane = prod(g.in_sp);
  g.out_plane = prod(g.out_sp);
  g.planes = prod(out, 0, out.size() - sp);
  return g;
}

// Lines that split the output index `w` into the plane pointer `x` and spatial coords o0.. (int).
std::string decompose(const Index& ix, const PoolGeom& g, const std::string& w, const std::string& in_t,
                      const std::string& indent) {
  std::ostringstream os;
  int64_t stride = 1;
  std::vector<std::string> lines;
  for (size_t d = g.sp; d-- > 0;) {
    std::string e = stride == 1 ? w : "(" + w + " / " + ix.lit(stride) + ")";
    lines.push_back(indent + "const int o" + std::to_string(d) + " = (int)(" + e + " % " + ix.lit(g.out_sp[d]) +
                    ");\n");
    stride *= g.out_sp[d];
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) os << *it;
  os << indent << "const " << in_t << "* __restrict__ x = in0 + (" << w << " / " << ix.lit(g.out_plane) << ") * "
     << ix.lit(g.in_plane) << ";\n";
  return os.str();
}

// Whether every window lies inside the input: no padding, and the last window of each dim ends by its
// end (ceil_mode's extra window would not).
bool full_windows(const PoolGeom& g, const std::vector<int64_t>& ks, const std::vector<int64_t>& st,
                  const std::vector<int64_t>& pd) {
  for (size_t d = 0; d < g.sp; ++d) {
    if (pd[d] != 0 || (g.out_sp[d] - 1) * st[d] + ks[d] > g.in_sp[d]) return false;
  }
  return true;
}

// The spatial offset expression of coords named <prefix>0.. inside a plane.
std::string spatial_offset(const PoolGeom& g, const std::string& prefix) {
  std::string e;
  for (size_t d = 0; d < g.sp; ++d) {
    int64_t stride = prod(g.in_sp, d + 1);
    if (!e.empty()) e += " + ";
    e += prefix + std::to_string(d);
    if (stride != 1) e += " * " + std::to_string(stride);
  }
  return e;
}

std::string launch(const EmitContext& ctx, int64_t threads, int block, const std::string& args) {
  std::ostringstream os;
  os << ctx.signature() << " {\n"
     << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << threads << "LL, " << block << "), " << block
     << ", 0, ctx->stream>>>(" << args << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  return os.str();
}

Status check_float(const EmitContext& ctx, const char* what) {
  if (!ir::is_floating(ctx.in_type(0).dtype)) {
    return unsupported(std::string(what) + " of a " + std::string(ir::dtype_name(ctx.in_type(0).dtype)) +
                       " tensor: torch's CUDA pooling kernels take floating-point tensors only");
  }
  return Status::ok();
}

// The source of a tiled pooling kernel `<kernel>_tiled` (its text opens the anonymous namespace):
// one block per tile, `tasks` blocks.
KernelSource tiled_source(const EmitContext& ctx, const std::string& kernel, int64_t tasks, int block) {
  KernelSource src = begin_source(ctx, half_headers(ctx.out_type().dtype));
  src.code += kernel + "}  // namespace\n\n" + ctx.signature() + " {\n  " + ctx.kernel.name + "_tiled<<<" +
              std::to_string(tasks) + "u, " + std::to_string(block) + ", 0, ctx->stream>>>(" + ctx.in_ptr(0) + ", " +
              ctx.out_ptr() + ");\n  KF_LAUNCHED();\n  return 0;\n}\n";
  return src;
}

// 1-D pooling of long rows through shared memory: a block takes a tile of TO consecutive outputs of
// one plane, stages the input span they read (coalesced, one load per element instead of one per
// window tap; positions outside the row hold -inf for max, 0 for avg, which is what skipping them
// gives: a max starts at -inf, a sum adds +0 exactly), then each thread computes outputs
// threadIdx.x + e * block of the tile from shared memory (consecutive threads, consecutive outputs:
// coalesced stores). Same window conventions and summation order as the per-output kernel.
std::optional<KernelSource> pool1d_tiled(const EmitContext& ctx, const PoolGeom& g, bool is_max, int64_t k,
                                         int64_t stride, int64_t pad, int64_t dil, bool include_pad, bool has_div,
                                         int64_t divisor) {
  const DType t = ctx.out_type().dtype;
  const std::string T = acc_type(t);
  const int64_t elem = T == "double" ? 8 : 4;
  const int block = 256;
  const int64_t L = g.in_sp[0], Lout = g.out_sp[0];
  if ((L + 2 * pad) * std::max<int64_t>(stride, 1) >= INT_MAX / 2) return std::nullopt;  // int positions in a row
  int64_t per_thread = 8, span = 0;
  for (; per_thread >= 1; per_thread /= 2) {
    span = (block * per_thread - 1) * stride + (k - 1) * dil + 1;
    if (span * elem <= 32 * 1024) break;
  }
  if (per_thread < 1) return std::nullopt;
  const int64_t TO = block * per_thread;
  const int64_t tiles = (Lout + TO - 1) / TO;
  const int64_t tasks = g.planes * tiles;
  if (tasks > INT_MAX) return std::nullopt;
  const std::string in_t = ctype(ctx.in_type(0).dtype);
  const std::string K = ctx.kernel.name;
  std::ostringstream os;
  os << "namespace {\n"
     << "// " << (is_max ? "max" : "avg") << "_pool1d over " << g.planes << " planes [" << L << "] -> [" << Lout
     << "], kernel " << k << ", stride " << stride << ", padding " << pad
     << (is_max ? ", dilation " + std::to_string(dil) : "") << ": tiles of " << TO << " outputs staged through " << span
     << " elements of shared memory\n"
     << "typedef " << T << " T;\n"
     << "__global__ void __launch_bounds__(" << block << ") " << K << "_tiled(const " << in_t << "* __restrict__ in0, "
     << ctype(t) << "* __restrict__ out) {\n"
     << "  __shared__ T xs[" << span << "];\n"
     << "  const long long plane = blockIdx.x / " << tiles << "LL;\n"
     << "  const int t0 = (int)(blockIdx.x - plane * " << tiles << "LL) * " << TO << ";\n"
     << "  const " << in_t << "* __restrict__ x = in0 + plane * " << L << "LL;\n"
     << "  const int h0 = t0 * " << stride << " - " << pad << ";\n"
     << "  for (int j = threadIdx.x; j < " << span << "; j += " << block << ") {\n"
     << "    const int h = h0 + j;\n"
     << "    xs[j] = (h >= 0 && h < " << L << ") ? " << load_expr("x[h]", ctx.in_type(0).dtype, T) << " : "
     << (is_max ? "(T)(-INFINITY)" : "(T)0") << ";\n"
     << "  }\n"
     << "  __syncthreads();\n"
     << "  " << ctype(t) << "* __restrict__ y = out + plane * " << Lout << "LL;\n"
     << "#pragma unroll\n"
     << "  for (int e = 0; e < " << per_thread << "; ++e) {\n"
     << "    const int r = threadIdx.x + e * " << block << ";\n"
     << "    const int o = t0 + r;\n"
     << "    if (o >= " << Lout << ") break;\n"
     << "    const T* w = xs + r * " << stride << ";\n";
  if (is_max) {
    os << "    T m = (T)(-INFINITY);\n"
       << "#pragma unroll\n"
       << "    for (int q = 0; q < " << k << "; ++q) {\n"
       << "      const T v = w[q * " << dil << "];\n"
       << "      if (v > m || isnan(v)) m = v;\n"
       << "    }\n"
       << "    y[o] = " << store_expr("m", t) << ";\n";
  } else {
    os << "    const int s = o * " << stride << " - " << pad << ";\n"
       << "    int e1 = min(s + " << k << ", " << L + pad << ");\n"
       << "    const int p = e1 - s;\n"
       << "    const int b = max(s, 0);\n"
       << "    e1 = min(e1, " << L << ");\n"
       << "    if (b >= e1) {\n"
       << "      y[o] = " << store_expr("(T)0", t) << ";\n"
       << "      continue;\n"
       << "    }\n"
       << "    T sum = (T)0;\n"
       << "#pragma unroll\n"
       << "    for (int q = 0; q < " << k << "; ++q) sum += w[q];\n";
    std::string div = has_div ? "(T)" + std::to_string(divisor) : include_pad ? "(T)p" : "(T)(e1 - b)";
    os << "    y[o] = " << store_expr("sum / " + div, t) << ";\n";
  }
  os << "  }\n"
     << "}\n";
  return tiled_source(ctx, os.str(), tasks, block);
}

// 2-D max pooling of large planes the same way: a block takes a tile of 32 x 64 outputs of one plane,
// stages the input rectangle they read (-inf outside the plane: the max skips those taps), then each
// thread computes eight outputs of one column of the tile from shared memory (a warp's 32 threads
// read 32 consecutive words per tap and store 32 consecutive outputs).
std::optional<KernelSource> maxpool2d_tiled(const EmitContext& ctx, const PoolGeom& g, const std::vector<int64_t>& k,
                                            const std::vector<int64_t>& st, const std::vector<int64_t>& pd,
                                            const std::vector<int64_t>& dil) {
  const DType t = ctx.out_type().dtype;
  const std::string T = acc_type(t);
  const int64_t elem = T == "double" ? 8 : 4;
  const int block = 256;
  const int64_t TH = 32, TW = 64;
  const int64_t SH = (TH - 1) * st[0] + (k[0] - 1) * dil[0] + 1, SW = (TW - 1) * st[1] + (k[1] - 1) * dil[1] + 1;
  if (SH * SW * elem > 40 * 1024) return std::nullopt;
  const int64_t H = g.in_sp[0], W = g.in_sp[1], OH = g.out_sp[0], OW = g.out_sp[1];
  if ((H + 2 * pd[0]) * (W + 2 * pd[1]) >= INT_MAX / 2 || OH * OW >= INT_MAX / 2) return std::nullopt;  // int offsets
  const int64_t th = (OH + TH - 1) / TH, tw = (OW + TW - 1) / TW;
  const int64_t tasks = g.planes * th * tw;
  if (tasks > INT_MAX) return std::nullopt;
  const std::string in_t = ctype(ctx.in_type(0).dtype);
  const std::string K = ctx.kernel.name;
  std::ostringstream os;
  os << "namespace {\n"
     << "// max_pool2d over " << g.planes << " planes " << ir::shape_str(g.in_sp) << " -> " << ir::shape_str(g.out_sp)
     << ", kernel " << ir::shape_str(k) << ", stride " << ir::shape_str(st) << ", padding " << ir::shape_str(pd)
     << ", dilation " << ir::shape_str(dil) << ": tiles of " << TH << "x" << TW << " outputs staged through " << SH
     << "x" << SW << " elements of shared memory\n"
     << "typedef " << T << " T;\n"
     << "__global__ void __launch_bounds__(" << block << ") " << K << "_tiled(const " << in_t << "* __restrict__ in0, "
     << ctype(t) << "* __restrict__ out) {\n"
     << "  __shared__ T xs[" << SH << "][" << SW << "];\n"
     << "  const long long plane = blockIdx.x / " << th * tw << "LL;\n"
     << "  const int tile = (int)(blockIdx.x - plane * " << th * tw << "LL);\n"
     << "  const int oh0 = (tile / " << tw << ") * " << TH << ", ow0 = (tile % " << tw << ") * " << TW << ";\n"
     << "  const " << in_t << "* __restrict__ x = in0 + plane * " << H * W << "LL;\n"
     << "  const int h0 = oh0 * " << st[0] << " - " << pd[0] << ", w0 = ow0 * " << st[1] << " - " << pd[1] << ";\n"
     << "  for (int j = threadIdx.x; j < " << SH * SW << "; j += " << block << ") {\n"
     << "    const int r = j / " << SW << ", c = j - r * " << SW << ";\n"
     << "    const int h = h0 + r, w = w0 + c;\n"
     << "    xs[r][c] = (h >= 0 && h < " << H << " && w >= 0 && w < " << W << ") ? "
     << load_expr("x[h * " + std::to_string(W) + " + w]", ctx.in_type(0).dtype, T) << " : (T)(-INFINITY);\n"
     << "  }\n"
     << "  __syncthreads();\n"
     << "  " << ctype(t) << "* __restrict__ y = out + plane * " << OH * OW << "LL;\n"
     << "  const int c = threadIdx.x % " << TW << ";\n"
     << "  const int ow = ow0 + c;\n"
     << "  if (ow >= " << OW << ") return;\n"
     << "#pragma unroll\n"
     << "  for (int e = 0; e < " << TH * TW / block << "; ++e) {\n"
     << "    const int r = threadIdx.x / " << TW << " + e * " << block / TW << ";\n"
     << "    const int oh = oh0 + r;\n"
     << "    if (oh >= " << OH << ") break;\n"
     << "    T m = (T)(-INFINITY);\n"
     << "#pragma unroll\n"
     << "    for (int a = 0; a < " << k[0] << "; ++a) {\n"
     << "#pragma unroll\n"
     << "      for (int b = 0; b < " << k[1] << "; ++b) {\n"
     << "        const T v = xs[r * " << st[0] << " + a * " << dil[0] << "][c * " << st[1] << " + b * " << dil[1]
     << "];\n"
     << "        if (v > m || isnan(v)) m = v;\n"
     << "      }\n"
     << "    }\n"
     << "    y[oh * " << OW << " + ow] = " << store_expr("m", t) << ";\n"
     << "  }\n"
     << "}\n";
  return tiled_source(ctx, os.str(), tasks, block);
}

}  // namespace

StatusOr<KernelSource> emit_Pool(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::Attrs& a = node.attrs;
  KF_RETURN_IF_ERROR(check_float(ctx, node.op == ir::OpId::kMaxPool ? "max_pool" : "avg_pool"));
  const auto& ks = a.ints("kernel_size");
  const auto& st = a.ints("stride");
  const auto& pd = a.ints("padding");
  size_t sp = ks.size();
  if (sp < 1 || sp > 3)
    return unsupported("pooling over " + std::to_string(sp) + " spatial dims: torch pools over 1, 2 or 3");
  bool is_max = node.op == ir::OpId::kMaxPool;
  std::vector<int64_t> dil = is_max ? a.ints("dilation") : std::vector<int64_t>(sp, 1);
  for (size_t d = 0; d < sp; ++d) {
    if (ks[d] <= 0 || st[d] <= 0 || dil[d] <= 0 || pd[d] < 0)
      return invalid_argument("pooling needs positive kernel_size, stride and dilation and non-negative padding");
  }
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  bool has_div = !is_max && !a.is_null("divisor_override");
  int64_t divisor = has_div ? a.i("divisor_override") : 0;
  if (has_div && divisor == 0) return invalid_argument("divisor_override must be non-zero");
  bool include_pad = !is_max && a.b("count_include_pad");

  PoolGeom g = geometry(ctx, sp);
  Index ix = index_for(std::max(ctx.in_type(0).numel(), n));
  DType t = ctx.out_type().dtype;
  std::string T = acc_type(t);
  std::string in_t = ctype(ctx.in_type(0).dtype);
  int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  if (sp == 1 && g.out_sp[0] >= 512 && ctx.kernel.knob(schedule::Knob::kTiled, 1) != 0) {
    if (auto tiled = pool1d_tiled(ctx, g, is_max, ks[0], st[0], pd[0], dil[0], include_pad, has_div, divisor))
      return *tiled;
  }
  if (sp == 2 && is_max && g.out_sp[1] >= 48 && g.out_sp[0] >= 16 && ctx.kernel.knob(schedule::Knob::kTiled, 1) != 0) {
    if (auto tiled = maxpool2d_tiled(ctx, g, ks, st, pd, dil)) return *tiled;
  }

  std::ostringstream k;
  k << "namespace {\n"
    << "// " << (is_max ? "max" : "avg") << "_pool" << sp << "d over " << g.planes << " planes "
    << ir::shape_str(g.in_sp) << " -> " << ir::shape_str(g.out_sp) << ", kernel " << ir::shape_str(ks) << ", stride "
    << ir::shape_str(st) << ", padding " << ir::shape_str(pd);
  if (is_max) k << ", dilation " << ir::shape_str(dil);
  k << (a.b("ceil_mode") ? ", ceil_mode" : "") << "\n"
    << "typedef " << T << " T;\n"
    << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(const " << in_t
    << "* __restrict__ in0, " << ctype(t) << "* __restrict__ out) {\n"
    << "  KF_GRID_STRIDE(i_, " << n << "LL) {\n"
    << "    const " << ix.type() << " w = (" << ix.type() << ")i_;\n"
    << decompose(ix, g, "w", in_t, "    ");
  for (size_t d = 0; d < sp; ++d) {
    k << "    const int s" << d << " = o" << d << " * " << st[d] << " - " << pd[d] << ";\n";
  }
  if (is_max) {
    k << "    T m = (T)(-INFINITY);\n";
    std::string ind = "    ";
    for (size_t d = 0; d < sp; ++d) {
      k << ind << "#pragma unroll\n"
        << ind << "for (int k" << d << " = 0; k" << d << " < " << ks[d] << "; ++k" << d << ") {\n"
        << ind << "  const int h" << d << " = s" << d << " + k" << d
        << (dil[d] != 1 ? " * " + std::to_string(dil[d]) : "") << ";\n"
        << ind << "  if (h" << d << " < 0 || h" << d << " >= " << g.in_sp[d] << ") continue;\n";
      ind += "  ";
    }
    k << ind << "const T v = " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T) << ";\n"
      << ind << "if (v > m || isnan(v)) m = v;\n";
    for (size_t d = sp; d-- > 0;) {
      ind.resize(ind.size() - 2);
      k << ind << "}\n";
    }
    k << "    out[w] = " << store_expr("m", t) << ";\n";
  } else if (full_windows(g, ks, st, pd)) {
    // Every window inside the input (no padding, none past the end): fixed trip counts, unrolled, so
    // a thread's loads are all in flight at once; the same order of additions as the general loop.
    k << "    T sum = (T)0;\n";
    std::string ind = "    ";
    for (size_t d = 0; d < sp; ++d) {
      k << ind << "#pragma unroll\n"
        << ind << "for (int h" << d << " = s" << d << "; h" << d << " < s" << d << " + " << ks[d] << "; ++h" << d
        << ") {\n";
      ind += "  ";
    }
    k << ind << "sum += " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T) << ";\n";
    for (size_t d = sp; d-- > 0;) {
      ind.resize(ind.size() - 2);
      k << ind << "}\n";
    }
    int64_t count = 1;
    for (size_t d = 0; d < sp; ++d) count *= ks[d];
    k << "    out[w] = " << store_expr("sum / (T)" + std::to_string(has_div ? divisor : count), t) << ";\n";
  } else {
    for (size_t d = 0; d < sp; ++d) {
      std::string D = std::to_string(d);
      k << "    int e" << D << " = min(s" << D << " + " << ks[d] << ", " << g.in_sp[d] + pd[d] << ");\n"
        << "    const int p" << D << " = e" << D << " - s" << D << ";\n"
        << "    const int b" << D << " = max(s" << D << ", 0);\n"
        << "    e" << D << " = min(e" << D << ", " << g.in_sp[d] << ");\n";
    }
    k << "    if (";
    for (size_t d = 0; d < sp; ++d) k << (d ? " || " : "") << "b" << d << " >= e" << d;
    k << ") {\n      out[w] = " << store_expr("(T)0", t) << ";\n      continue;\n    }\n"
      << "    T sum = (T)0;\n";
    std::string ind = "    ";
    for (size_t d = 0; d < sp; ++d) {
      k << ind << "for (int h" << d << " = b" << d << "; h" << d << " < e" << d << "; ++h" << d << ") {\n";
      ind += "  ";
    }
    k << ind << "sum += " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T) << ";\n";
    for (size_t d = sp; d-- > 0;) {
      ind.resize(ind.size() - 2);
      k << ind << "}\n";
    }
    std::string div;
    if (has_div) {
      div = "(T)" + std::to_string(divisor);
    } else {
      for (size_t d = 0; d < sp; ++d) {
        std::string D = std::to_string(d);
        div += (d ? " * " : "") + (include_pad ? "p" + D : "(e" + D + " - b" + D + ")");
      }
      div = "(T)(" + div + ")";
    }
    k << "    out[w] = " << store_expr("sum / " + div, t) << ";\n";
  }
  k << "  }\n"
    << "}\n"
    << "}  // namespace\n\n";
  KernelSource src = begin_source(ctx, half_headers(t));
  src.code += k.str() + launch(ctx, n, block, ctx.in_ptr(0) + ", " + ctx.out_ptr());
  return src;
}

StatusOr<KernelSource> emit_AdaptivePool(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  bool is_max = node.op == ir::OpId::kAdaptiveMaxPool;
  KF_RETURN_IF_ERROR(check_float(ctx, is_max ? "adaptive_max_pool" : "adaptive_avg_pool"));
  size_t sp = node.attrs.ints("output_size").size();
  if (sp < 1 || sp > 3)
    return unsupported("adaptive pooling over " + std::to_string(sp) + " spatial dims: torch pools over 1, 2 or 3");
  int64_t n = ctx.out_type().numel();
  if (n == 0) return empty_kernel(ctx);
  PoolGeom g = geometry(ctx, sp);
  // The longest window along each dim decides between a thread and a group of threads per output.
  std::vector<int64_t> longest(sp, 0);
  for (size_t d = 0; d < sp; ++d) {
    int64_t I = g.in_sp[d], O = g.out_sp[d];
    for (int64_t o = 0; o < O; ++o) longest[d] = std::max(longest[d], ((o + 1) * I + O - 1) / O - (o * I) / O);
  }
  int64_t window = prod(longest);
  // Global pooling (every output size 1): each output reduces its whole plane, which is contiguous, so
  // the lanes walk it flat, 16 bytes at a time for fp32 planes of a multiple of 4 elements (a warp
  // per plane walking 126 rows of 126 ran at 0.5 TB/s on level2/67), a block per plane from 2048 on.
  const bool global = g.out_plane == 1;
  int group = global ? (window >= 2048 ? 256 : window > 64 ? 32 : 1) : window > 16384 ? 256 : window > 64 ? 32 : 1;
  group = static_cast<int>(ctx.kernel.knob(schedule::Knob::kGroup, group));
  if (group != 1 && group != 32 && group != 256)
    return invalid_argument("adaptive pool knob 'group' must be 1, 32 or 256");

  Index ix = index_for(std::max(ctx.in_type(0).numel(), n) * 2);
  DType t = ctx.out_type().dtype;
  std::string T = acc_type(t);
  std::string in_t = ctype(ctx.in_type(0).dtype);
  int block = group == 256 ? 256 : static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  if (block % 32 != 0 || block <= 0)
    return invalid_argument("adaptive pool knob 'block' must be a positive multiple of 32");

  std::string combine = is_max ? "if (v > acc || isnan(v)) acc = v;" : "acc += v;";
  std::ostringstream k;
  k << "namespace {\n"
    << "// adaptive_" << (is_max ? "max" : "avg") << "_pool" << sp << "d over " << g.planes << " planes "
    << ir::shape_str(g.in_sp) << " -> " << ir::shape_str(g.out_sp) << " (longest window " << window << " elements, "
    << group << " thread" << (group == 1 ? "" : "s") << " per output)\n"
    << "typedef " << T << " T;\n"
    << "__device__ __forceinline__ T combine_(T acc, T v) { " << combine << " return acc; }\n"
    << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(const " << in_t
    << "* __restrict__ in0, " << ctype(t) << "* __restrict__ out) {\n";
  std::string init = is_max ? "(T)(-INFINITY)" : "(T)0";
  std::string indent;
  if (group == 1) {
    k << "  KF_GRID_STRIDE(i_, " << n << "LL) {\n"
      << "    const " << ix.type() << " w = (" << ix.type() << ")i_;\n";
    indent = "    ";
  } else if (group == 32) {
    k << "  const int lane = threadIdx.x & 31;\n"
      << "  for (" << ix.type() << " w = (" << ix.type()
      << ")((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5); w < " << ix.lit(n) << "; w += (" << ix.type()
      << ")((gridDim.x * (int64_t)blockDim.x) >> 5)) {\n";
    indent = "    ";
  } else {
    k << "  __shared__ T partial_[8];\n"
      << "  const int lane = threadIdx.x;\n"
      << "  for (" << ix.type() << " w = blockIdx.x; w < " << ix.lit(n) << "; w += gridDim.x) {\n";
    indent = "    ";
  }
  k << decompose(ix, g, "w", in_t, indent);
  for (size_t d = 0; d < sp; ++d) {
    std::string D = std::to_string(d);
    int64_t I = g.in_sp[d], O = g.out_sp[d];
    k << indent << "const int s" << D << " = (int)(((int64_t)o" << D << " * " << I << "LL) / " << O << "LL);\n"
      << indent << "const int l" << D << " = (int)((((int64_t)o" << D << " + 1) * " << I << "LL + " << O - 1 << "LL) / "
      << O << "LL) - s" << D << ";\n";
  }
  k << indent << "T acc = " << init << ";\n";
  std::string last = std::to_string(sp - 1);
  if (group == 1) {
    std::string ind = indent;
    for (size_t d = 0; d < sp; ++d) {
      k << ind << "for (int h" << d << " = s" << d << "; h" << d << " < s" << d << " + l" << d << "; ++h" << d
        << ") {\n";
      ind += "  ";
    }
    k << ind << "const T v = " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T) << ";\n"
      << ind << "acc = combine_(acc, v);\n";
    for (size_t d = sp; d-- > 0;) {
      ind.resize(ind.size() - 2);
      k << ind << "}\n";
    }
  } else {
    // Rows of the window (all but the last dim) one after another, the lanes across each row when
    // rows are long; otherwise the lanes across the flattened window.
    std::string rows = "1";
    for (size_t d = 0; d + 1 < sp; ++d) rows += " * l" + std::to_string(d);
    bool by_rows = longest[sp - 1] >= group / 2;
    auto row_coords = [&](const std::string& r, const std::string& ind) {
      std::ostringstream os;
      os << ind << "int rr_ = " << r << ";\n";
      for (size_t d = sp - 1; d-- > 0;) {
        std::string D = std::to_string(d);
        os << ind << "const int h" << D << " = s" << D << " + rr_ % l" << D << ";\n" << ind << "rr_ /= l" << D << ";\n";
      }
      os << ind << "(void)rr_;\n";
      return os.str();
    };
    const bool flat4 = global && g.in_plane % 4 == 0 && ctx.in_type(0).dtype == DType::kFloat32;
    if (global) {
      if (flat4) {
        k << indent << "if ((reinterpret_cast<uintptr_t>(in0) & 15) == 0) {\n"
          << indent << "  const float4* x4 = reinterpret_cast<const float4*>(x);\n"
          << indent << "#pragma unroll 4\n"
          << indent << "  for (int f = lane; f < " << g.in_plane / 4 << "; f += " << group << ") {\n"
          << indent << "    const float4 v = x4[f];\n"
          << indent << "    acc = combine_(combine_(combine_(combine_(acc, (T)v.x), (T)v.y), (T)v.z), (T)v.w);\n"
          << indent << "  }\n"
          << indent << "} else {\n";
      }
      k << indent << "for (int f = lane; f < " << g.in_plane << "; f += " << group << ") {\n"
        << indent << "  const T v = " << load_expr("x[f]", ctx.in_type(0).dtype, T) << ";\n"
        << indent << "  acc = combine_(acc, v);\n"
        << indent << "}\n";
      if (flat4) k << indent << "}\n";
    } else if (by_rows) {
      k << indent << "for (int r = 0; r < " << rows << "; ++r) {\n"
        << row_coords("r", indent + "  ") << indent << "  for (int a = lane; a < l" << last << "; a += " << group
        << ") {\n"
        << indent << "    const int h" << last << " = s" << last << " + a;\n"
        << indent << "    const T v = " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T)
        << ";\n"
        << indent << "    acc = combine_(acc, v);\n"
        << indent << "  }\n"
        << indent << "}\n";
    } else {
      k << indent << "const int cnt = " << rows << " * l" << last << ";\n"
        << indent << "for (int f = lane; f < cnt; f += " << group << ") {\n"
        << indent << "  const int h" << last << " = s" << last << " + f % l" << last << ";\n"
        << row_coords("f / l" + last, indent + "  ") << indent
        << "  const T v = " << load_expr("x[" + spatial_offset(g, "h") + "]", ctx.in_type(0).dtype, T) << ";\n"
        << indent << "  acc = combine_(acc, v);\n"
        << indent << "}\n";
    }
    k << indent << "#pragma unroll\n"
      << indent
      << "for (int off = 16; off > 0; off >>= 1) acc = combine_(acc, __shfl_xor_sync(0xffffffffu, acc, off));\n";
    if (group == 256) {
      k << indent << "if ((lane & 31) == 0) partial_[lane >> 5] = acc;\n"
        << indent << "__syncthreads();\n"
        << indent << "if (lane < 32) {\n"
        << indent << "  acc = lane < 8 ? partial_[lane] : " << init << ";\n"
        << indent << "  #pragma unroll\n"
        << indent
        << "  for (int off = 4; off > 0; off >>= 1) acc = combine_(acc, __shfl_xor_sync(0xffffffffu, acc, off));\n"
        << indent << "}\n"
        << indent << "__syncthreads();\n";
    }
  }
  std::string result = "acc";
  if (!is_max) {
    for (size_t d = 0; d < sp; ++d) result += " / (T)l" + std::to_string(d);
  }
  k << indent << (group == 1 ? "" : "if (lane == 0) ") << "out[w] = " << store_expr(result, t) << ";\n"
    << "  }\n"
    << "}\n"
    << "}  // namespace\n\n";
  KernelSource src = begin_source(ctx, half_headers(t));
  int64_t threads = group == 1 ? n : n * group;
  if (group == 256) {
    std::ostringstream os;
    os << ctx.signature() << " {\n"
       << "  const int64_t blocks = " << n << "LL;\n"
       << "  " << ctx.kernel.name
       << "_kernel<<<(unsigned int)(blocks < 132LL * 16 ? blocks : 132LL * 16), 256, 0, ctx->stream>>>("
       << ctx.in_ptr(0) << ", " << ctx.out_ptr() << ");\n"
       << "  KF_LAUNCHED();\n"
       << "  return 0;\n"
       << "}\n";
    src.code += k.str() + os.str();
  } else {
    src.code += k.str() + launch(ctx, threads, block, ctx.in_ptr(0) + ", " + ctx.out_ptr());
  }
  return src;
}

}  // namespace kforge::codegen
