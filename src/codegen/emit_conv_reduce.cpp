// The conv_reduce_epilogue skill's pass over a channels-last convolution's result: a softmax,
// log_softmax or reduction (sum, mean, amax, amin) over the channels, with the pointwise nodes before
// it (the conv_epilogue chain, the reduction's prologue) and after it.
//
// cuDNN leaves the result as [N][S][C]: the C channels of a position are one contiguous row. A block
// takes 32 positions of one sample, 32 x C contiguous floats (16-byte loads when C % 4 == 0), adds the
// bias and computes the chain before the consumer on each, and keeps them in a shared-memory tile of
// 32 rows (row stride C | 1, odd: a warp reading one channel of 32 positions hits 32 banks). Eight
// groups of 32 threads (one warp each, a lane per position) take every eighth channel; their partial
// statistics meet in shared memory. A softmax then writes each channel's 32 positions (128 contiguous
// bytes of the NCHW output) through the chain after it; a reduction writes its 32 outputs (one per
// position, NCHW order (n, s)) through that chain. The NCHW result is never written and never read
// again: before, the pass back wrote it (a full write) and the consumer read it across channel planes.
#include <algorithm>
#include <set>
#include <sstream>

#include "codegen/conv_common.h"
#include "kernels/forms.h"

namespace kforge::codegen::conv {

namespace {

// Parameters (and their host expressions) of several pointwise functions, each once.
struct Operands {
  std::vector<std::string> params, args, hosts;
  std::set<std::string> seen;
  void add(const PointwiseFunction& f) {
    auto split = [](const std::string& s) {
      std::vector<std::string> out;
      size_t at = 0;
      while (!s.empty() && at <= s.size()) {
        const size_t next = s.find(", ", at);
        out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos) break;
        at = next + 2;
      }
      return out;
    };
    const auto p = split(f.params), a = split(f.call_args), h = split(f.host_args);
    for (size_t i = 0; i < a.size() && i < p.size() && i < h.size(); ++i) {
      if (!seen.insert(a[i]).second) continue;
      params.push_back(p[i]);
      args.push_back(a[i]);
      hosts.push_back(h[i]);
    }
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += ", " + s;
    return out;
  }
};

}  // namespace

StatusOr<ChannelsLastBack> channel_consumer_back(const EmitContext& ctx, const ConvGeom& g, const std::string& bias) {
  const ir::Graph& gr = ctx.graph;
  const auto& nodes = ctx.kernel.nodes;
  size_t at = 0;
  for (size_t i = 1; i < nodes.size() && at == 0; ++i) {
    if (!ir::is_pointwise(gr.nodes()[static_cast<size_t>(nodes[i])])) at = i;
  }
  if (at == 0) return internal_error("kernel " + ctx.kernel.name + ": no channel consumer after the convolution");
  const ir::Node& conv = gr.nodes()[static_cast<size_t>(nodes.front())];
  const ir::Node& r = gr.nodes()[static_cast<size_t>(nodes[at])];
  if (!kernels::is_channel_consumer(gr, r))
    return internal_error("kernel " + ctx.kernel.name + ": " + ir::describe(gr, r) + " is not a channel consumer");
  const std::vector<int> pre(nodes.begin() + 1, nodes.begin() + static_cast<std::ptrdiff_t>(at));
  const std::vector<int> post(nodes.begin() + static_cast<std::ptrdiff_t>(at) + 1, nodes.end());
  const ir::ValueIndex made = pre.empty() ? conv.output : gr.nodes()[static_cast<size_t>(pre.back())].output;
  if (made != r.inputs[0] || gr.type(conv.output).dtype != ir::DType::kFloat32)
    return internal_error("kernel " + ctx.kernel.name + ": the channel consumer does not read the float32 chain");
  const std::string name = ctx.kernel.name;
  const bool softmax = ir::op_info(r.op).family == ir::OpFamily::kSoftmax;

  Operands ops;
  std::string functions;
  PointwiseFunction pre_fn, post_fn;
  if (!pre.empty()) {
    KF_ASSIGN_OR_RETURN(pre_fn, pointwise_function(ctx, pre, name + "_pre", conv.output, g.spatial_out));
    ops.add(pre_fn);
    functions += pre_fn.code + "\n";
  }
  if (!post.empty()) {
    // After a norm the chain has the conv's shape: its per-channel operands are read at the plane's start.
    const auto kind = kernels::consumer_kind(gr, r);
    const bool norm = kind == kernels::ConsumerKind::kNorm || kind == kernels::ConsumerKind::kRowNorm;
    KF_ASSIGN_OR_RETURN(post_fn, pointwise_function(ctx, post, name + "_post", r.output, norm ? g.spatial_out : 0));
    ops.add(post_fn);
    functions += post_fn.code + "\n";
  }
  const int64_t C = g.cout, S = g.spatial_out, N = g.n;
  const std::string cs = std::to_string(C), ss = std::to_string(S);
  const int64_t CP = C | 1;
  const bool vec = C % 4 == 0;
  auto with_args = [](const PointwiseFunction& f) { return f.call_args.empty() ? "" : ", " + f.call_args; };
  auto with_params = [](const PointwiseFunction& f) { return f.params.empty() ? "" : ", " + f.params; };

  std::ostringstream os;
  os << "\n// The channel consumer (conv_reduce_epilogue skill): " << ir::describe(gr, r) << ".\n" << functions;
  // One element of the consumer's input from the conv's value v of channel c at position s of sample n.
  os << "__device__ __forceinline__ float " << name << "_elem(long long n, long long c, long long s, float v"
     << (bias.empty() ? "" : ", const float* __restrict__ bias") << (pre.empty() ? "" : with_params(pre_fn)) << ") {\n"
     << (bias.empty() ? "" : "  v = v + bias[c];\n")
     << (pre.empty() ? "  (void)n; (void)c; (void)s;\n  return v;\n"
                     : "  return " + name + "_pre((n * " + cs + "LL + c) * " + ss + "LL + s, v" + with_args(pre_fn) +
                           ", (n * " + cs + "LL + c) * " + ss + "LL);\n")
     << "}\n\n";
  const std::string elem_args = (bias.empty() ? "" : ", bias") + (pre.empty() ? "" : with_args(pre_fn));
  const std::string nan_max = "if (x > m || isnan(x)) m = x;";  // NaN propagates, as torch's max
  auto post_at = [&](const std::string& idx, const std::string& v) {
    return post.empty() ? v : name + "_post(" + idx + ", " + v + with_args(post_fn) + ")";
  };
  std::string ident, combine;  // a reduction's identity and its step `m (+)= x`
  switch (r.op) {
    case ir::OpId::kSum:
    case ir::OpId::kMean:
    case ir::OpId::kAdaptiveAvgPool:
      ident = "0.0f";
      combine = "m += x;";
      break;
    case ir::OpId::kAmax:
      ident = "-INFINITY";
      combine = nan_max;
      break;
    case ir::OpId::kAmin:
      ident = "INFINITY";
      combine = "if (x < m || isnan(x)) m = x;";
      break;
    default: break;
  }
  const bool mean = r.op == ir::OpId::kMean || r.op == ir::OpId::kAdaptiveAvgPool;
  const int64_t stat_chunks = std::clamp<int64_t>((4 * 132 + N - 1) / N, 1, std::max<int64_t>(1, S / 1024));
  // The head of a kernel over the rows of one sample in chunks of positions (spatial reductions, norm
  // statistics): threads over channel quads (Q of them) and R rows of positions, block (chunk, sample).
  auto chunked_rows_head = [&](const std::string& kernel, const std::string& outputs, const std::string& shared,
                               int64_t per_chunk) {
    std::ostringstream h;
    h << "__global__ void __launch_bounds__(256) " << kernel << "(const float* __restrict__ ycl"
      << (bias.empty() ? "" : ", const float* __restrict__ bias") << (pre.empty() ? "" : with_params(pre_fn)) << ", "
      << outputs << ") {\n"
      << "  constexpr long long C = " << C << "LL, S = " << S << "LL, CHUNK = " << per_chunk << "LL;\n"
      << "  constexpr int Q = " << C / 4 << ", R = " << 256 / (C / 4) << ";  // channel quads, rows of positions\n"
      << "  __shared__ " << shared << ";\n"
      << "  const int q = threadIdx.x % Q, row = threadIdx.x / Q;\n"
      << "  const long long n = blockIdx.y, s_begin = (long long)blockIdx.x * CHUNK;\n"
      << "  const long long s_end = s_begin + CHUNK < S ? s_begin + CHUNK : S;\n"
      << "  const long long c = 4LL * q;\n";
    return h.str();
  };
  if (kernels::consumer_kind(gr, r) == kernels::ConsumerKind::kPool) {
    // A 2-d or 3-d pool of non-overlapping windows: a block takes 32 outputs of one output row of one
    // sample, all channels; threads over channels (coalesced reads of each position's row) reduce each
    // window into a shared tile [32][C | 1], then warps write 32 consecutive outputs of a channel.
    const bool avg = r.op == ir::OpId::kAvgPool;
    const auto ks = r.attrs.ints("kernel_size");
    const ir::Shape& in_shape = gr.type(r.inputs[0]).shape;
    const ir::Shape& out_shape = gr.type(r.output).shape;
    const bool three = ks.size() == 3;
    const size_t h = in_shape.size() - 2, w = in_shape.size() - 1;  // the last two dims
    const int64_t H = in_shape[h], W = in_shape[w], OD = three ? out_shape[2] : 1, OH = out_shape[h], OW = out_shape[w];
    const int64_t KD = three ? ks[0] : 1, KH = ks[ks.size() - 2], KW = ks.back();
    os << "__global__ void __launch_bounds__(256) " << name << "_pool(const float* __restrict__ ycl"
       << (bias.empty() ? "" : ", const float* __restrict__ bias") << Operands::join(ops.params)
       << ", float* __restrict__ out) {\n"
       << "  constexpr long long C = " << C << "LL, S = " << S << "LL, W = " << W << "LL, OH = " << OH
       << "LL, OW = " << OW << "LL"
       << (three ? ", H = " + std::to_string(H) + "LL, OD = " + std::to_string(OD) + "LL" : "") << ";\n"
       << "  constexpr int " << (three ? "KD = " + std::to_string(KD) + ", " : "") << "KH = " << KH << ", KW = " << KW
       << ", P = 32, CP = " << CP << ";\n"
       << "  __shared__ float tile[P * CP];\n"
       << "  const long long ow0 = (long long)blockIdx.x * P, "
       << (three ? "row = blockIdx.y, od = row / OH, oh = row % OH" : "oh = blockIdx.y") << ", n = blockIdx.z;\n"
       << "  for (int e = threadIdx.x; e < P * (int)C; e += 256) {\n"
       << "    const int q = e / (int)C, c = e - q * (int)C;\n"
       << "    const long long ow = ow0 + q;\n"
       << "    if (ow >= OW) continue;\n"
       << "    float m = " << (avg ? "0.0f" : "-INFINITY") << ";\n";
    std::string ind = "    ";
    if (three) {
      os << ind << "#pragma unroll\n" << ind << "for (int dz = 0; dz < KD; ++dz) {\n";
      ind += "  ";
    }
    os << ind << "#pragma unroll\n"
       << ind << "for (int dy = 0; dy < KH; ++dy) {\n"
       << ind << "#pragma unroll\n"
       << ind << "  for (int dx = 0; dx < KW; ++dx) {\n"
       << ind << "    const long long s = "
       << (three ? "((od * KD + dz) * H + oh * KH + dy) * W + ow * KW + dx" : "(oh * KH + dy) * W + ow * KW + dx")
       << ";\n"
       << ind << "    const float x = " << name << "_elem(n, c, s, ycl[(n * S + s) * C + c]" << elem_args << ");\n"
       << ind << "    " << (avg ? "m += x;" : nan_max) << "\n"
       << ind << "  }\n"
       << ind << "}\n";
    if (three) os << "    }\n";
    os << "    tile[q * CP + c] = " << (avg ? "m / " + float_literal(static_cast<double>(KD * KH * KW)) : "m") << ";\n"
       << "  }\n"
       << "  __syncthreads();\n"
       << "  for (int e = threadIdx.x; e < P * (int)C; e += 256) {\n"
       << "    const int c = e / P, q = e % P;\n"
       << "    if (ow0 + q >= OW) continue;\n"
       << "    const long long o = ((n * C + c) * " << (three ? "OD * OH + row" : "OH + oh") << ") * OW + ow0 + q;\n"
       << "    const float y = tile[q * CP + c];\n"
       << "    __stcs(out + o, " << post_at("o", "y") << ");\n"
       << "  }\n"
       << "}\n";
    ChannelsLastBack back;
    back.device = os.str();
    std::ostringstream host;
    host << "  (void)batches;\n"
         << "  " << name << "_pool<<<dim3(" << (OW + 31) / 32 << "u, " << OD * OH << "u, " << N
         << "u), 256, 0, ctx->stream>>>(ycl" << (bias.empty() ? "" : ", " + bias) << Operands::join(ops.hosts) << ", "
         << ctx.out_ptr() << ");\n"
         << "  KF_LAUNCHED();\n";
    back.host = host.str();
    back.launches = 1;
    return back;
  }
  if (kernels::consumer_kind(gr, r) == kernels::ConsumerKind::kRowNorm) {
    // A layer norm over the last dim (W positions, W | 128): the transpose back's tile of 32 channels x
    // 128 positions holds 128 / W whole rows of each channel. After 16-byte loads along C, each warp
    // takes 4 of the tile's channels, lane l the positions l + 32 m (m < 4: consecutive banks, no
    // conflicts), through the bias and the chain before; a row's sums by shuffles over its min(W, 32)
    // lanes, then over its W / 32 values of m; mean, then the variance of (x - mean) (two passes, as the
    // norm's rows kernel); normalize, weight, bias and the chain after, back into the tile; then 16-byte
    // stores along S. One read of the conv's result and one write of the norm's, nothing in between.
    const int64_t W = gr.type(r.inputs[0]).shape.back();
    const double eps = r.attrs.f("eps");
    const bool has_w = r.inputs.size() > 1 && r.inputs[1] != ir::kNoValue;
    const bool has_b = r.inputs.size() > 2 && r.inputs[2] != ir::kNoValue;
    // The sum over each row of the four values v[0..3] a lane holds, into m[0..3] (every lane of the row
    // gets its row's total).
    auto row_sums = [&](const std::string& v, const std::string& m) {
      std::ostringstream b;
      b << "      float " << m << "[4];\n"
        << "#pragma unroll\n"
        << "      for (int k = 0; k < 4; ++k) {\n"
        << "        " << m << "[k] = " << v << ";\n"
        << "#pragma unroll\n"
        << "        for (int o = SEG / 2; o > 0; o >>= 1) " << m << "[k] += __shfl_xor_sync(0xffffffffu, " << m
        << "[k], o);\n"
        << "      }\n";
      if (W > 32) {
        b << "      {  // rows longer than a warp: the totals of their W / 32 consecutive m\n"
          << "        float t[4];\n"
          << "#pragma unroll\n"
          << "        for (int k = 0; k < 4; ++k) {\n"
          << "          t[k] = 0.0f;\n"
          << "#pragma unroll\n"
          << "          for (int u = 0; u < W / 32; ++u) t[k] += " << m << "[k / (W / 32) * (W / 32) + u];\n"
          << "        }\n"
          << "#pragma unroll\n"
          << "        for (int k = 0; k < 4; ++k) " << m << "[k] = t[k];\n"
          << "      }\n";
      }
      return b.str();
    };
    os << "__global__ void __launch_bounds__(256) " << name << "_row_norm(const float* __restrict__ ycl"
       << (bias.empty() ? "" : ", const float* __restrict__ bias") << Operands::join(ops.params)
       << (has_w ? ", const float* __restrict__ lw" : "") << (has_b ? ", const float* __restrict__ lb" : "")
       << ", float* __restrict__ out) {\n"
       << "  constexpr long long C = " << C << "LL, S = " << S << "LL, N = " << N << "LL;\n"
       << "  constexpr int W = " << W << ", SEG = W < 32 ? W : 32;  // the row's length, its lanes in one m\n"
       << "  __shared__ float tile[32][129];\n"
       << "  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32;\n"
       << "  const int np = (int)(S - s0 < 128 ? S - s0 : 128);  // whole rows: S and s0 are multiples of W\n"
       << "  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;  // loads: 4-channel quad, position\n"
       << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;  // the norm: positions, channels\n"
       << "  const int srow = threadIdx.x >> 3, chunk = threadIdx.x & 7;  // stores: channel, 4-position chunk\n"
       << "  for (long long n = blockIdx.z; n < N; n += gridDim.z) {\n"
       << "    const float* yb = ycl + (n * S + s0) * C + c0;\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < 4; ++k) {\n"
       << "      const int s = pos + 32 * k;\n"
       << "      if (s < np && c0 + 4 * quad < C) {\n"
       << "        const float4 v = *reinterpret_cast<const float4*>(yb + s * C + 4 * quad);\n"
       << "        tile[4 * quad][s] = v.x;\n"
       << "        tile[4 * quad + 1][s] = v.y;\n"
       << "        tile[4 * quad + 2][s] = v.z;\n"
       << "        tile[4 * quad + 3][s] = v.w;\n"
       << "      }\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "#pragma unroll 1\n"
       << "    for (int q = 0; q < 4; ++q) {\n"
       << "      const int ch = warp * 4 + q;\n"
       << "      const long long c = c0 + ch;\n"
       << "      float v[4];\n"
       << "#pragma unroll\n"
       << "      for (int k = 0; k < 4; ++k) {\n"
       << "        const int p = lane + 32 * k;\n"
       << "        v[k] = c < C && p < np ? " << name << "_elem(n, c, s0 + p, tile[ch][p]" << elem_args << ") : 0.0f;\n"
       << "      }\n"
       << row_sums("v[k]", "mean") << "#pragma unroll\n"
       << "      for (int k = 0; k < 4; ++k) mean[k] = mean[k] / (float)W;\n"
       << row_sums("(v[k] - mean[k]) * (v[k] - mean[k])", "sq")
       << "      const long long i_row = (n * C + c) * S;  // the plane's first index\n"
       << "      (void)i_row;\n"
       << "#pragma unroll\n"
       << "      for (int k = 0; k < 4; ++k) {\n"
       << "        const int p = lane + 32 * k;\n"
       << "        if (c < C && p < np) {\n"
       << "          float y = (v[k] - mean[k]) * (1.0f / sqrtf(sq[k] / (float)W + " << float_literal(eps) << "));\n"
       << (has_w ? "          y = y * lw[p % W];\n" : "") << (has_b ? "          y = y + lb[p % W];\n" : "")
       << (post.empty() ? "" : "          y = " + name + "_post(i_row + s0 + p, y" + with_args(post_fn) + ", i_row);\n")
       << "          tile[ch][p] = y;\n"
       << "        }\n"
       << "      }\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "#pragma unroll\n"
       << "    for (int k = 0; k < 4; ++k) {\n"
       << "      const int s = 32 * k + 4 * chunk;\n"
       << "      if (c0 + srow < C && s < np)\n"
       << "        __stcs(reinterpret_cast<float4*>(out + (n * C + c0 + srow) * S + s0 + s),\n"
       << "               make_float4(tile[srow][s], tile[srow][s + 1], tile[srow][s + 2], tile[srow][s + 3]));\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "  }\n"
       << "}\n";
    ChannelsLastBack back;
    back.device = os.str();
    std::ostringstream host;
    host << "  if (reinterpret_cast<uintptr_t>(" << ctx.out_ptr() << ") % 16 != 0) return kf_fail(2, \"" << name
         << ": the layer norm's output is not 16-byte aligned\");\n"
         << "  " << name << "_row_norm<<<dim3(" << (S + 127) / 128 << "u, " << (C + 31) / 32
         << "u, batches), 256, 0, ctx->stream>>>(ycl" << (bias.empty() ? "" : ", " + bias) << Operands::join(ops.hosts)
         << (has_w ? ", " + ctx.ptr(r.inputs[1], false) : "") << (has_b ? ", " + ctx.ptr(r.inputs[2], false) : "")
         << ", " << ctx.out_ptr() << ");\n"
         << "  KF_LAUNCHED();\n";
    back.host = host.str();
    back.launches = 1;
    return back;
  }
  if (kernels::consumer_kind(gr, r) == kernels::ConsumerKind::kNorm) {
    // Instance, group or batch norm (batch statistics). Statistics from the rows: a block takes a chunk
    // of one sample's positions, threads 4 channels each, sums of x - k and (x - k)^2 with k the
    // channel's value at position 0 of the sample (no cancellation from a large mean); a merge per
    // (sample, group) -- per channel for a batch norm -- turns each (sample, channel)'s sums into
    // (mean, M2) and combines the group's channels, or the channel's samples, in double (Chan et al.),
    // then (mean, rstd). The transpose back to NCHW computes (x - mean) * rstd * weight + bias and the
    // chains on each value.
    const bool group = r.op == ir::OpId::kGroupNorm, batch = r.op == ir::OpId::kBatchNorm;
    const int64_t G = group ? r.attrs.i("num_groups") : C, per = C / G;
    const int64_t stat_count = batch ? C : N * G;  // (mean, rstd) pairs
    const double eps = r.attrs.f("eps");
    const bool has_w = r.inputs.size() > 1 && r.inputs[1] != ir::kNoValue;
    const bool has_b = r.inputs.size() > 2 && r.inputs[2] != ir::kNoValue;
    const int64_t chunks = stat_chunks;
    const int64_t per_chunk = (S + chunks - 1) / chunks;
    std::ostringstream st;
    st << chunked_rows_head(name + "_norm_stats", "float4* __restrict__ p1, float4* __restrict__ p2",
                            "float4 part1[R][Q], part2[R][Q]", per_chunk)
       << "  float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b = a;\n"
       << "  if (row < R) {\n"
       << "    const float4 k0 = *reinterpret_cast<const float4*>(ycl + n * S * C + c);  // the shift: position 0\n"
       << "    const float kx = " << name << "_elem(n, c, 0, k0.x" << elem_args << "), ky = " << name
       << "_elem(n, c + 1, 0, k0.y" << elem_args << ");\n"
       << "    const float kz = " << name << "_elem(n, c + 2, 0, k0.z" << elem_args << "), kw = " << name
       << "_elem(n, c + 3, 0, k0.w" << elem_args << ");\n"
       << "#pragma unroll 4\n"
       << "    for (long long s = s_begin + row; s < s_end; s += R) {\n"
       << "      const float4 v = *reinterpret_cast<const float4*>(ycl + (n * S + s) * C + c);\n"
       << "      const float dx = " << name << "_elem(n, c, s, v.x" << elem_args << ") - kx;\n"
       << "      const float dy = " << name << "_elem(n, c + 1, s, v.y" << elem_args << ") - ky;\n"
       << "      const float dz = " << name << "_elem(n, c + 2, s, v.z" << elem_args << ") - kz;\n"
       << "      const float dw = " << name << "_elem(n, c + 3, s, v.w" << elem_args << ") - kw;\n"
       << "      a.x += dx; a.y += dy; a.z += dz; a.w += dw;\n"
       << "      b.x += dx * dx; b.y += dy * dy; b.z += dz * dz; b.w += dw * dw;\n"
       << "    }\n"
       << "    part1[row][q] = a;\n"
       << "    part2[row][q] = b;\n"
       << "  }\n"
       << "  __syncthreads();\n"
       << "  if (row == 0) {\n"
       << "    for (int k = 1; k < R; ++k) {\n"
       << "      const float4 u = part1[k][q], w = part2[k][q];\n"
       << "      a.x += u.x; a.y += u.y; a.z += u.z; a.w += u.w;\n"
       << "      b.x += w.x; b.y += w.y; b.z += w.z; b.w += w.w;\n"
       << "    }\n"
       << "    p1[(n * gridDim.x + blockIdx.x) * Q + q] = a;\n"
       << "    p2[(n * gridDim.x + blockIdx.x) * Q + q] = b;\n"
       << "  }\n"
       << "}\n\n"
       << "__global__ void __launch_bounds__(256) " << name << "_norm_merge(const float* __restrict__ p1, "
       << "const float* __restrict__ p2, const float* __restrict__ ycl"
       << (bias.empty() ? "" : ", const float* __restrict__ bias") << (pre.empty() ? "" : with_params(pre_fn))
       << ", float2* __restrict__ stats) {\n"
       << "  constexpr long long C = " << C << "LL, S = " << S << "LL, N = " << N << "LL, G = " << G
       << "LL, PER = " << per << "LL;\n"
       << "  constexpr int CHUNKS = " << chunks << ";\n"
       << (batch ? "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // the channel\n"
                   "  if (t >= C) return;\n"
                   "  (void)G; (void)PER;\n"
                   "  const long long c = t;\n"
                   "  double count = 0.0, mean = 0.0, m2 = 0.0;\n"
                   "  for (long long n = 0; n < N; ++n) {\n"
                 : "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // (sample, group)\n"
                   "  if (t >= N * G) return;\n"
                   "  const long long n = t / G, g = t % G;\n"
                   "  double count = 0.0, mean = 0.0, m2 = 0.0;\n"
                   "  for (long long c = g * PER; c < (g + 1) * PER; ++c) {\n")
       << "    double s1 = 0.0, s2 = 0.0;\n"
       << "    for (int k = 0; k < CHUNKS; ++k) {\n"
       << "      s1 += (double)p1[(n * CHUNKS + k) * C + c];\n"
       << "      s2 += (double)p2[(n * CHUNKS + k) * C + c];\n"
       << "    }\n"
       << "    const double kc = (double)" << name << "_elem(n, c, 0, ycl[n * S * C + c]" << elem_args << ");\n"
       << "    const double mc = kc + s1 / (double)S, m2c = s2 - s1 * s1 / (double)S;\n"
       << "    const double total = count + (double)S, delta = mc - mean;\n"
       << "    mean += delta * (double)S / total;\n"
       << "    m2 += m2c + delta * delta * count * (double)S / total;\n"
       << "    count = total;\n"
       << "  }\n"
       << "  const double var = m2 > 0.0 ? m2 / count : 0.0;\n"
       << "  stats[t] = make_float2((float)mean, (float)(1.0 / sqrt(var + " << double_literal(eps) << ")));\n"
       << "}\n";
    // The per-value chain of the transpose back: the prologue, the norm, the epilogue.
    std::ostringstream ch;
    std::string chain_params = "const float2* __restrict__ kf_stats", chain_call = "n, c, kf_stats",
                chain_host = "kf_stats";
    if (has_w) {
      chain_params += ", const float* __restrict__ nw";
      chain_call += ", nw";
      chain_host += ", " + ctx.ptr(r.inputs[1], false);
    }
    if (has_b) {
      chain_params += ", const float* __restrict__ nb";
      chain_call += ", nb";
      chain_host += ", " + ctx.ptr(r.inputs[2], false);
    }
    chain_params += Operands::join(ops.params);
    chain_call += Operands::join(ops.args);
    chain_host += Operands::join(ops.hosts);
    ch << os.str() << "__device__ __forceinline__ float " << name
       << "_norm_chain(long long i, float v, long long n, long long c, " << chain_params << ") {\n"
       << "  const long long i_row = (n * " << C << "LL + c) * " << S << "LL;  // the plane's first index\n"
       << "  (void)i_row;\n"
       << (pre.empty() ? "" : "  v = " + name + "_pre(i, v" + with_args(pre_fn) + ", i_row);\n")
       << (batch
               ? "  const float2 st = kf_stats[c];\n"
               : "  const float2 st = kf_stats[n * " + std::to_string(G) + "LL + c / " + std::to_string(per) + "LL];\n")
       << "  float y = (v - st.x) * st.y;\n"
       << (has_w ? "  y = y * nw[c];\n" : "") << (has_b ? "  y = y + nb[c];\n" : "")
       << (post.empty() ? "  (void)i;\n  return y;\n"
                        : "  return " + name + "_post(i, y" + with_args(post_fn) + ", i_row);\n")
       << "}\n";
    auto epi = std::make_shared<ChannelsLastEpilogue>();
    epi->name = name + "_norm_chain";
    epi->out_dtype = ir::DType::kFloat32;
    epi->chain.code = ch.str();
    epi->chain.params = chain_params;
    epi->chain.call_args = chain_call;
    epi->chain.host_args = chain_host;
    ChannelsLastBack back;
    back.device = st.str();
    back.transpose_with = epi;
    const size_t part_bytes = static_cast<size_t>(N * chunks * C) * sizeof(float);
    const size_t stats_offset = (2 * part_bytes + 255) / 256 * 256;
    const size_t need = stats_offset + static_cast<size_t>(stat_count) * 8;
    std::ostringstream host;
    host << "  // The statistics' partials and (mean, rstd) go where cuDNN's workspace was (the conv is done).\n"
         << "  if (conv_ctx.workspace_bytes < " << need << "ULL) return kf_fail(2, \"" << name
         << ": the norm statistics need " << need << " bytes of scratch\");\n"
         << "  float* p1 = static_cast<float*>(conv_ctx.workspace);\n"
         << "  float* p2 = p1 + " << N * chunks * C << "LL;\n"
         << "  const float2* kf_stats = reinterpret_cast<const float2*>(static_cast<char*>(conv_ctx.workspace) + "
         << stats_offset << "ULL);\n"
         << "  " << name << "_norm_stats<<<dim3(" << chunks << "u, " << N << "u), 256, 0, ctx->stream>>>(ycl"
         << (bias.empty() ? "" : ", " + bias) << (pre_fn.host_args.empty() ? "" : ", " + pre_fn.host_args)
         << ", reinterpret_cast<float4*>(p1), reinterpret_cast<float4*>(p2));\n"
         << "  KF_LAUNCHED();\n"
         << "  " << name << "_norm_merge<<<" << (stat_count + 255) / 256 << "u, 256, 0, ctx->stream>>>(p1, p2, ycl"
         << (bias.empty() ? "" : ", " + bias) << (pre_fn.host_args.empty() ? "" : ", " + pre_fn.host_args)
         << ", const_cast<float2*>(kf_stats));\n"
         << "  KF_LAUNCHED();\n";
    back.host = host.str();
    back.launches = 2;
    return back;
  }
  if (kernels::consumer_kind(gr, r) == kernels::ConsumerKind::kSpatial) {
    // Over every spatial dim: out[n][c] from the S rows of sample n. Threads take 4 channels each
    // (16-byte loads), 256 / (C / 4) rows of positions per block; a block reduces a chunk of the
    // positions and leaves one partial per channel in scratch; a second kernel merges a sample's
    // chunks in order (deterministic) and writes through the chain after.
    const int64_t chunks = stat_chunks;
    const int64_t per_chunk = (S + chunks - 1) / chunks;
    auto step = [&](const std::string& lane, const std::string& ch) {
      return "{ const float x = " + name + "_elem(n, " + ch + ", s, v." + lane + elem_args + "); float& m = a." + lane +
             "; " + combine + " }";
    };
    os << chunked_rows_head(name + "_spatial", "float4* __restrict__ partial", "float4 part[R][Q]", per_chunk)
       << "  float4 a = make_float4(" << ident << ", " << ident << ", " << ident << ", " << ident << ");\n"
       << "  if (row < R) {\n"
       << "#pragma unroll 4\n"
       << "    for (long long s = s_begin + row; s < s_end; s += R) {\n"
       << "      const float4 v = *reinterpret_cast<const float4*>(ycl + (n * S + s) * C + c);\n"
       << "      " << step("x", "c") << "\n"
       << "      " << step("y", "c + 1") << "\n"
       << "      " << step("z", "c + 2") << "\n"
       << "      " << step("w", "c + 3") << "\n"
       << "    }\n"
       << "    part[row][q] = a;\n"
       << "  }\n"
       << "  __syncthreads();\n"
       << "  if (row == 0) {\n"
       << "    for (int k = 1; k < R; ++k) {\n"
       << "      const float4 v = part[k][q];\n"
       << "      { const float x = v.x; float& m = a.x; " << combine << " }\n"
       << "      { const float x = v.y; float& m = a.y; " << combine << " }\n"
       << "      { const float x = v.z; float& m = a.z; " << combine << " }\n"
       << "      { const float x = v.w; float& m = a.w; " << combine << " }\n"
       << "    }\n"
       << "    partial[(n * gridDim.x + blockIdx.x) * Q + q] = a;\n"
       << "  }\n"
       << "}\n\n"
       << "__global__ void __launch_bounds__(256) " << name << "_spatial_merge(const float* __restrict__ partial"
       << (post.empty() ? "" : with_params(post_fn)) << ", float* __restrict__ out) {\n"
       << "  constexpr long long C = " << C << "LL, N = " << N << "LL;\n"
       << "  constexpr int CHUNKS = " << chunks << ";\n"
       << "  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // the output (n, c)\n"
       << "  if (o >= N * C) return;\n"
       << "  const long long n = o / C, c = o % C;\n"
       << "  float m = " << ident << ";\n"
       << "  for (int k = 0; k < CHUNKS; ++k) {\n"
       << "    const float x = partial[(n * CHUNKS + k) * C + c];\n"
       << "    " << combine << "\n"
       << "  }\n"
       << (mean ? "  m = m / " + float_literal(static_cast<double>(S)) + ";\n" : "")
       << "  out[o] = " << post_at("o", "m") << ";\n"
       << "}\n";
    ChannelsLastBack back;
    back.device = os.str();
    const size_t partial_bytes = static_cast<size_t>(N * chunks * C) * sizeof(float);
    std::ostringstream host;
    host << "  // The chunks' partials go where cuDNN's workspace was (the conv is done on this stream).\n"
         << "  if (conv_ctx.workspace_bytes < " << partial_bytes << "ULL) return kf_fail(2, \"" << name
         << ": the spatial reduction's partials need " << partial_bytes << " bytes of scratch\");\n"
         << "  float* partial = static_cast<float*>(conv_ctx.workspace);\n"
         << "  (void)batches;\n"
         << "  " << name << "_spatial<<<dim3(" << chunks << "u, " << N << "u), 256, 0, ctx->stream>>>(ycl"
         << (bias.empty() ? "" : ", " + bias) << (pre_fn.host_args.empty() ? "" : ", " + pre_fn.host_args)
         << ", reinterpret_cast<float4*>(partial));\n"
         << "  KF_LAUNCHED();\n"
         << "  " << name << "_spatial_merge<<<" << (N * C + 255) / 256 << "u, 256, 0, ctx->stream>>>(partial"
         << (post_fn.host_args.empty() ? "" : ", " + post_fn.host_args) << ", " << ctx.out_ptr() << ");\n"
         << "  KF_LAUNCHED();\n";
    back.host = host.str();
    back.launches = 2;
    return back;
  }
  os << "__global__ void __launch_bounds__(256) " << name << "_channels(const float* __restrict__ ycl"
     << (bias.empty() ? "" : ", const float* __restrict__ bias") << Operands::join(ops.params)
     << ", float* __restrict__ out) {\n"
     << "  constexpr long long C = " << C << "LL, S = " << S << "LL, N = " << N << "LL;\n"
     << "  constexpr int P = 32, CP = " << CP << ";  // positions per block, the tile's row stride (odd)\n"
     << "  __shared__ float tile[P * CP];\n"
     << "  __shared__ float part_a[8][P];\n"
     << (softmax ? "  __shared__ float part_b[8][P];\n" : "")
     << "  const int p = threadIdx.x & 31, part = threadIdx.x >> 5;  // the position, the eighth of the channels\n"
     << "  const long long s0 = (long long)blockIdx.x * P;\n"
     << "  const int np = (int)(S - s0 < P ? S - s0 : P);\n"
     << "  for (long long n = blockIdx.y; n < N; n += gridDim.y) {\n"
     << "    const float* src = ycl + (n * S + s0) * C;  // np rows of C channels, contiguous\n";
  if (vec) {
    os << "    for (int e = threadIdx.x; e < np * (int)(C / 4); e += 256) {\n"
       << "      const float4 v = reinterpret_cast<const float4*>(src)[e];\n"
       << "      const int q = e / (int)(C / 4), c = (e - q * (int)(C / 4)) * 4;\n"
       << "      float* t = tile + q * CP + c;\n"
       << "      t[0] = " << name << "_elem(n, c, s0 + q, v.x" << elem_args << ");\n"
       << "      t[1] = " << name << "_elem(n, c + 1, s0 + q, v.y" << elem_args << ");\n"
       << "      t[2] = " << name << "_elem(n, c + 2, s0 + q, v.z" << elem_args << ");\n"
       << "      t[3] = " << name << "_elem(n, c + 3, s0 + q, v.w" << elem_args << ");\n"
       << "    }\n";
  } else {
    os << "    for (int e = threadIdx.x; e < np * (int)C; e += 256) {\n"
       << "      const int q = e / (int)C, c = e - q * (int)C;\n"
       << "      tile[q * CP + c] = " << name << "_elem(n, c, s0 + q, src[e]" << elem_args << ");\n"
       << "    }\n";
  }
  os << "    __syncthreads();\n";
  if (!softmax && ident.empty()) return internal_error("no channel reduction for " + ir::describe(gr, r));
  if (softmax) {
    const bool log = r.op == ir::OpId::kLogSoftmax;
    os << "    // The maximum over the channels, then the sum of exp(x - max); NaN propagates.\n"
       << "    float m = -INFINITY;\n"
       << "    if (p < np) {\n"
       << "      for (int c = part; c < (int)C; c += 8) {\n"
       << "        const float x = tile[p * CP + c];\n"
       << "        " << nan_max << "\n"
       << "      }\n"
       << "    }\n"
       << "    part_a[part][p] = m;\n"
       << "    __syncthreads();\n"
       << "    m = part_a[0][p];\n"
       << "    for (int k = 1; k < 8; ++k) {\n"
       << "      const float x = part_a[k][p];\n"
       << "      " << nan_max << "\n"
       << "    }\n"
       << "    float z = 0.0f;\n"
       << "    if (p < np) {\n"
       << "      for (int c = part; c < (int)C; c += 8) z += expf(tile[p * CP + c] - m);\n"
       << "    }\n"
       << "    part_b[part][p] = z;\n"
       << "    __syncthreads();\n"
       << "    z = 0.0f;\n"
       << "    for (int k = 0; k < 8; ++k) z += part_b[k][p];\n"
       << (log ? "    const float lz = logf(z);\n" : "") << "    if (p < np) {\n"
       << "      for (int c = part; c < (int)C; c += 8) {\n"
       << "        const long long i = (n * C + c) * S + s0 + p;\n"
       << "        const float y = " << (log ? "tile[p * CP + c] - m - lz" : "expf(tile[p * CP + c] - m) / z") << ";\n"
       << "        __stcs(out + i, " << post_at("i", "y") << ");  // streaming stores\n"
       << "      }\n"
       << "    }\n";
  } else {
    os << "    float m = " << ident << ";\n"
       << "    if (p < np) {\n"
       << "      for (int c = part; c < (int)C; c += 8) {\n"
       << "        const float x = tile[p * CP + c];\n"
       << "        " << combine << "\n"
       << "      }\n"
       << "    }\n"
       << "    part_a[part][p] = m;\n"
       << "    __syncthreads();\n"
       << "    if (part == 0 && p < np) {\n"
       << "      for (int k = 1; k < 8; ++k) {\n"
       << "        const float x = part_a[k][p];\n"
       << "        " << combine << "\n"
       << "      }\n"
       << (mean ? "      m = m / " + float_literal(static_cast<double>(C)) + ";\n" : "")
       << "      const long long o = n * S + s0 + p;  // the output (n, s): NCHW order of the reduced tensor\n"
       << "      out[o] = " << post_at("o", "m") << ";\n"
       << "    }\n";
  }
  os << "    __syncthreads();\n"
     << "  }\n"
     << "}\n";
  ChannelsLastBack back;
  back.device = os.str();
  std::ostringstream host;
  host << "  " << name << "_channels<<<dim3(" << (S + 31) / 32 << "u, batches), 256, 0, ctx->stream>>>(ycl"
       << (bias.empty() ? "" : ", " + bias) << Operands::join(ops.hosts) << ", " << ctx.out_ptr() << ");\n"
       << "  KF_LAUNCHED();\n";
  back.host = host.str();
  back.launches = 1;
  return back;
}

}  // namespace kforge::codegen::conv
