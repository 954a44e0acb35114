// grid_sample (Resample family, F.grid_sample of a 4-D input): one thread per output element (n, c, ho, wo)
// reads its grid point and computes the source coordinate with the steps and types of torch's
// grid_sampler_2d CUDA kernel (unnormalize, clip or reflect by padding_mode, out-of-int-range and NaN
// coordinates sent to -100), then blends the four neighbours (bilinear; a tap outside the input adds
// nothing) or takes the nearest (round half to even; outside the input: zero). Float math for float and
// 16-bit inputs, double for float64.
#include <algorithm>
#include <sstream>

#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

struct Math {
  std::string acc, floor, fabs, fmod, fmin, fmax, nearbyint;  // the accumulation type and its functions
};

Math math_of(bool dbl) {
  if (dbl) return {"double", "floor", "fabs", "fmod", "fmin", "fmax", "nearbyint"};
  return {"float", "floorf", "fabsf", "fmodf", "fminf", "fmaxf", "nearbyintf"};
}

// The statements that turn grid coordinate `g` into source coordinate `c` over a dim of n elements
// (grid_sampler_compute_source_index: grid_sampler_unnormalize, then compute_coordinates).
std::string source_index(const Math& m, const std::string& c, const std::string& g, int64_t n,
                         const std::string& padding, bool corners) {
  std::ostringstream os;
  const std::string& t = m.acc;
  if (corners)  // [-1, 1] -> [0, n - 1]
    os << "    " << t << " " << c << " = ((" << g << " + 1.f) / 2) * " << n - 1 << ";\n";
  else  // [-1, 1] -> [-0.5, n - 0.5]
    os << "    " << t << " " << c << " = ((" << g << " + 1.f) * " << n << " - 1) / 2;\n";
  const std::string clip = "    " + c + " = " + m.fmin + "((" + t + ")" + std::to_string(n - 1) + ", " + m.fmax + "(" +
                           c + ", (" + t + ")0));\n";
  if (padding == "border") os << clip;
  if (padding == "reflection") {
    // reflect_coordinates between twice_low / 2 and twice_high / 2, then clip.
    const int64_t twice_low = corners ? 0 : -1, twice_high = corners ? 2 * (n - 1) : 2 * n - 1;
    if (twice_low == twice_high) {
      os << "    " << c << " = (" << t << ")0;\n";
    } else {
      const double lo = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
      const std::string lo_s = t == "double" ? double_literal(lo) : float_literal(lo);
      const std::string span_s = t == "double" ? double_literal(span) : float_literal(span);
      os << "    {\n"
         << "      const " << t << " v = " << m.fabs << "(" << c << " - " << lo_s << ");\n"
         << "      const " << t << " extra = " << m.fmod << "(v, " << span_s << ");\n"
         << "      const int flips = (int)" << m.floor << "(v / " << span_s << ");\n"
         << "      " << c << " = flips % 2 == 0 ? extra + " << lo_s << " : " << span_s << " - extra + " << lo_s << ";\n"
         << "    }\n";
    }
    os << clip;
  }
  // safe_downgrade_to_int_range: outside int's range or not finite -> -100 (outside the input).
  os << "    if (" << c << " > (" << t << ")2147483646 || " << c << " < (" << t
     << ")(-2147483647 - 1) || !isfinite((double)" << c << ")) " << c << " = (" << t << ")-100.0;\n";
  return os.str();
}

}  // namespace

StatusOr<KernelSource> emit_grid_sample(const EmitContext& ctx) {
  using layout::Index;
  const ir::Shape& in = ctx.in_type(0).shape;   // (N, C, H, W)
  const ir::Shape& out = ctx.out_type().shape;  // (N, C, Ho, Wo)
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const ir::Attrs& a = ctx.node().attrs;
  const std::string& mode = a.s("mode");
  const std::string& padding = a.s("padding_mode");
  const bool corners = a.b("align_corners");
  if (mode != "bilinear" && mode != "nearest")
    return invalid_argument("grid_sample: mode '" + mode + "' is not supported (bilinear or nearest)");
  const int64_t C = in[1], H = in[2], W = in[3], Ho = out[2], Wo = out[3];
  const ir::DType t = ctx.out_type().dtype;
  const Math m = math_of(t == ir::DType::kFloat64);
  const std::string load = layout::is_half(t) ? "(float)" : "";
  const Index ix = layout::index_for(std::max({total, ctx.in_type(0).numel(), ctx.in_type(1).numel()}));
  std::ostringstream body;
  body << "    const int64_t nc = (int64_t)(i / " << ix.lit(Ho * Wo) << "), p = (int64_t)(i % " << ix.lit(Ho * Wo)
       << ");\n"
       << "    const int64_t g = (nc / " << C << "LL * " << Ho * Wo << "LL + p) * 2;\n"
       << "    const int64_t base = nc * " << H * W << "LL;\n"
       << "    const " << m.acc << " gx = (" << m.acc << ")" << load << "in1[g], gy = (" << m.acc << ")" << load
       << "in1[g + 1];\n"
       << source_index(m, "sx", "gx", W, padding, corners) << source_index(m, "sy", "gy", H, padding, corners);
  if (mode == "nearest") {
    body << "    const int xn = (int)" << m.nearbyint << "(sx), yn = (int)" << m.nearbyint << "(sy);\n"
         << "    out[i] = yn >= 0 && yn < " << H << " && xn >= 0 && xn < " << W << " ? in0[base + (int64_t)yn * " << W
         << "LL + xn] : " << layout::zero_of(t) << ";\n";
  } else {
    // The four neighbours' areas (nw, ne, sw, se), then each in-bounds tap added in that order.
    const std::string& acc = m.acc;
    body << "    const int x0 = (int)" << m.floor << "(sx), y0 = (int)" << m.floor
         << "(sy), x1 = x0 + 1, y1 = y0 + 1;\n"
         << "    const " << acc
         << " nw = (x1 - sx) * (y1 - sy), ne = (sx - x0) * (y1 - sy), sw = (x1 - sx) * (sy - y0),"
         << " se = (sx - x0) * (sy - y0);\n"
         << "    const bool in_x0 = x0 >= 0 && x0 < " << W << ", in_x1 = x1 >= 0 && x1 < " << W << ";\n"
         << "    const bool in_y0 = y0 >= 0 && y0 < " << H << ", in_y1 = y1 >= 0 && y1 < " << H << ";\n"
         << "    " << acc << " v = 0;\n";
    const char* taps[4][3] = {{"y0", "x0", "nw"}, {"y0", "x1", "ne"}, {"y1", "x0", "sw"}, {"y1", "x1", "se"}};
    for (const auto& tap : taps)
      body << "    if (in_" << tap[0] << " && in_" << tap[1] << ") v += (" << acc << ")" << load
           << "in0[base + (int64_t)" << tap[0] << " * " << W << "LL + " << tap[1] << "] * " << tap[2] << ";\n";
    body << "    out[i] = " << layout::convert("v", t == ir::DType::kFloat64 ? t : ir::DType::kFloat32, t) << ";\n";
  }
  return layout::gather_kernel(ctx, ix, body.str(),
                               mode + " grid_sample of " + ir::shape_str(in) + " at a grid of " + std::to_string(Ho) +
                                   " x " + std::to_string(Wo) + " (padding " + padding +
                                   (corners ? ", align_corners)" : ")"));
}

}  // namespace kforge::codegen
