// Resample family (F.interpolate): upsample_nearest and upsample_linear over the trailing 1 to 3 dims and
// upsample_bicubic over the last 2 of a 4-D input, gather kernels with one thread per output element
// (grid_sample, the family's other op, is emit_grid_sample.cpp's). The source coordinate is computed as
// torch's CUDA kernels compute it: the ratio per dim in float (double for float64 linear and bicubic),
// nearest at min(floor(o * r), n - 1), linear blending the two neighbours per dim, outermost dim first,
// bicubic as torch's upsample_bicubic2d: a cubic convolution along W in each of 4 rows, then along H.
#include <algorithm>
#include <functional>
#include <sstream>
#include <tuple>

#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

using layout::Index;

// The source-per-output ratio of one dim of n -> m elements (torch's compute_scales_value and
// area_pixel_compute_scale), as a literal of the accumulation type.
std::string ratio(const ir::Attrs& a, bool linear, int64_t n, int64_t m, bool dbl) {
  double r = 0;
  if (linear && a.b("align_corners")) {
    r = m > 1 ? (dbl ? static_cast<double>(n - 1) / static_cast<double>(m - 1)
                     : static_cast<double>(static_cast<float>(n - 1) / static_cast<float>(m - 1)))
              : 0.0;
  } else if (!a.is_null("scale")) {
    r = dbl ? 1.0 / a.f("scale") : static_cast<double>(static_cast<float>(1.0 / a.f("scale")));
  } else {
    r = dbl ? static_cast<double>(n) / static_cast<double>(m)
            : static_cast<double>(static_cast<float>(n) / static_cast<float>(m));
  }
  return dbl ? double_literal(r) : float_literal(r);
}

// torch's cubic convolution weights (A = -0.75) of the 4 taps around a source coordinate with fraction `t`
// (get_cubic_upsampling_coefficients): w<d>[0..3], in the accumulation type, with the same float/double
// steps as torch's (t + 1.0 and 1.0 - t in double, then converted).
std::string cubic_weights(const std::string& acc, const std::string& d, const std::string& t) {
  // cubic_convolution1(x) = ((A + 2) * x - (A + 3)) * x * x + 1 for |x| <= 1, cubic_convolution2(x) =
  // ((A * x - 5 * A) * x + 8 * A) * x - 4 * A for 1 < |x| < 2.
  auto near = [](const std::string& x) { return "((A + 2) * " + x + " - (A + 3)) * " + x + " * " + x + " + 1"; };
  auto far = [](const std::string& x) { return "((A * " + x + " - 5 * A) * " + x + " + 8 * A) * " + x + " - 4 * A"; };
  const std::string a = "fa" + d, b = "fb" + d, c = "fc" + d;
  std::ostringstream os;
  os << "    const " << acc << " " << a << " = (" << acc << ")(" << t << " + 1.0), " << b << " = (" << acc << ")(1.0 - "
     << t << "), " << c << " = (" << acc << ")(" << b << " + 1.0);\n"
     << "    const " << acc << " w" << d << "[4] = {" << far(a) << ", " << near(t) << ", " << near(b) << ", " << far(c)
     << "};\n";
  return os.str();
}

// upsample_bicubic of (N, C, H, W) to size (Ho, Wo): torch's upsample_bicubic2d_out_frame per output element
// (equal sizes copy, as torch does whatever the scale).
StatusOr<KernelSource> emit_upsample_bicubic(const EmitContext& ctx) {
  const ir::Shape& in = ctx.in_type(0).shape;
  const ir::Shape& out = ctx.out_type().shape;
  const ir::Attrs& a = ctx.node().attrs;
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  if (in == out) return layout::memcpy_kernel(ctx, 0, 0, total);
  const int64_t H = in[2], W = in[3], Ho = out[2], Wo = out[3];
  const ir::DType t = ctx.out_type().dtype;
  const bool dbl = t == ir::DType::kFloat64;
  const std::string acc = dbl ? "double" : "float";
  const std::string load = layout::is_half(t) ? "(float)" : "";
  const Index ix = layout::index_for(std::max(total, ctx.in_type(0).numel()));
  const bool corners = a.b("align_corners");
  std::ostringstream body;
  body << "    const int64_t base = (int64_t)(i / " << ix.lit(Ho * Wo) << ") * " << H * W << "LL;\n"
       << "    const int oy = (int)((i / " << ix.lit(Wo) << ") % " << ix.lit(Ho) << "), ox = (int)(i % " << ix.lit(Wo)
       << ");\n"
       << "    const " << acc << " A = -0.75;\n";
  // area_pixel_compute_source_index(cubic=true), then in = floorf(real) (floorf of a double too, as torch).
  const std::tuple<std::string, std::string, int64_t, int64_t> dims[] = {{"y", "oy", H, Ho}, {"x", "ox", W, Wo}};
  for (const auto& [d, o, n, m] : dims) {
    const std::string r = ratio(a, true, n, m, dbl);
    if (corners)
      body << "    const " << acc << " r" << d << " = " << r << " * (" << acc << ")" << o << ";\n";
    else
      body << "    const " << acc << " r" << d << " = " << r << " * ((" << acc << ")" << o << " + (" << acc
           << ")0.5) - (" << acc << ")0.5;\n";
    body << "    const int s" << d << " = (int)floorf(" << (dbl ? "(float)" : "") << "r" << d << ");\n"
         << "    const " << acc << " t" << d << " = r" << d << " - (" << acc << ")s" << d << ";\n"
         << cubic_weights(acc, d, "t" + d);
  }
  // Taps clamped into the input (upsample_get_value_bounded): rows s_y - 1 .. s_y + 2, columns likewise; a
  // cubic along each row, then one down the column of the 4 results.
  const std::string v = "(" + acc + ")" + load;
  body << "    int col[4];\n"
       << "    for (int j = 0; j < 4; ++j) col[j] = max(min(sx - 1 + j, " << W - 1 << "), 0);\n"
       << "    " << acc << " rows[4];\n"
       << "    for (int k = 0; k < 4; ++k) {\n"
       << "      const int64_t row = base + (int64_t)max(min(sy - 1 + k, " << H - 1 << "), 0) * " << W << "LL;\n"
       << "      rows[k] = " << v << "in0[row + col[0]] * wx[0] + " << v << "in0[row + col[1]] * wx[1] + " << v
       << "in0[row + col[2]] * wx[2] + " << v << "in0[row + col[3]] * wx[3];\n"
       << "    }\n"
       << "    const " << acc << " v = rows[0] * wy[0] + rows[1] * wy[1] + rows[2] * wy[2] + rows[3] * wy[3];\n"
       << "    out[i] = " << layout::convert("v", dbl ? t : ir::DType::kFloat32, t) << ";\n";
  return layout::gather_kernel(
      ctx, ix, body.str(),
      "bicubic resampling of " + ir::shape_str(in) + " to " + ir::shape_str(out) + (corners ? " (align_corners)" : ""));
}

}  // namespace

StatusOr<KernelSource> emit_Resample(const EmitContext& ctx) {
  if (ctx.node().op == ir::OpId::kGridSample) return emit_grid_sample(ctx);
  if (ctx.node().op == ir::OpId::kUpsampleBicubic) return emit_upsample_bicubic(ctx);
  const ir::Shape& in = ctx.in_type(0).shape;
  const ir::Shape& out = ctx.out_type().shape;
  const ir::Attrs& a = ctx.node().attrs;
  const size_t k = a.ints("size").size();
  const size_t lead = in.size() - k;
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const bool linear = ctx.node().op == ir::OpId::kUpsampleLinear;
  const ir::DType t = ctx.out_type().dtype;
  const bool dbl = t == ir::DType::kFloat64;
  const std::string acc = dbl ? "double" : "float";
  const Index ix = layout::index_for(std::max(total, ctx.in_type(0).numel()));
  const ir::Shape out_sp(out.begin() + static_cast<std::ptrdiff_t>(lead), out.end());
  int64_t in_plane = 1;
  for (size_t j = lead; j < in.size(); ++j) in_plane *= in[j];
  std::vector<int64_t> in_stride(k, 1);
  for (size_t j = k; j-- > 1;) in_stride[j - 1] = in_stride[j] * in[lead + j];
  std::ostringstream body;
  const int64_t plane = layout::prod(out_sp);
  body << "    const int64_t base = (int64_t)(i / " << ix.lit(plane) << ") * " << in_plane << "LL;\n";
  for (size_t j = 0; j < k; ++j) {
    const int64_t n = in[lead + j], m = out_sp[j];
    const std::string o = "o" + std::to_string(j), r = ratio(a, linear, n, m, dbl);
    body << "    const int64_t " << o << " = (int64_t)" << layout::coord(ix, out_sp, j, "(i % " + ix.lit(plane) + ")")
         << ";\n";
    if (!linear) {
      body << "    int64_t s" << j << " = (int64_t)floorf((float)" << o << " * " << r << ");\n"
           << "    if (s" << j << " > " << n - 1 << "LL) s" << j << " = " << n - 1 << "LL;\n";
      continue;
    }
    if (a.b("align_corners")) {
      body << "    const " << acc << " r" << j << " = " << r << " * (" << acc << ")" << o << ";\n";
    } else {
      body << "    " << acc << " r" << j << " = " << r << " * ((" << acc << ")" << o << " + (" << acc << ")0.5) - ("
           << acc << ")0.5;\n"
           << "    if (r" << j << " < (" << acc << ")0) r" << j << " = 0;\n";
    }
    body << "    const int64_t s" << j << " = (int64_t)r" << j << ";\n"
         << "    const int64_t p" << j << " = s" << j << " < " << n - 1 << "LL ? 1 : 0;\n"
         << "    const " << acc << " l" << j << " = r" << j << " - (" << acc << ")s" << j << ", m" << j << " = (" << acc
         << ")1 - l" << j << ";\n";
  }
  const std::string load = layout::is_half(t) ? "(float)" : "";
  if (!linear) {
    body << "    out[i] = in0[base";
    for (size_t j = 0; j < k; ++j)
      body << " + s" << j << (in_stride[j] != 1 ? " * " + std::to_string(in_stride[j]) + "LL" : "");
    body << "];\n";
  } else {
    // value(j, off) = m_j * value(j + 1, off + s_j * stride_j) + l_j * value(j + 1, off + (s_j + p_j) * stride_j)
    std::function<std::string(size_t, const std::string&)> value = [&](size_t j,
                                                                       const std::string& off) -> std::string {
      if (j == k) return "(" + acc + ")" + load + "in0[" + off + "]";
      const std::string st = in_stride[j] != 1 ? " * " + std::to_string(in_stride[j]) + "LL" : "";
      const std::string sj = std::to_string(j);
      return "(m" + sj + " * " + value(j + 1, off + " + s" + sj + st) + " + l" + sj + " * " +
             value(j + 1, off + " + (s" + sj + " + p" + sj + ")" + st) + ")";
    };
    body << "    const " << acc << " v = " << value(0, "base") << ";\n"
         << "    out[i] = " << layout::convert("v", dbl ? t : ir::DType::kFloat32, t) << ";\n";
  }
  return layout::gather_kernel(ctx, ix, body.str(),
                               std::string(linear ? "linear" : "nearest") + " resampling of " + ir::shape_str(in) +
                                   " to " + ir::shape_str(out) +
                                   (linear && a.b("align_corners") ? " (align_corners)" : ""));
}

}  // namespace kforge::codegen
