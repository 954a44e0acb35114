// Resample family (F.interpolate): upsample_nearest and upsample_linear over the trailing 1 to 3 dims, a
// gather kernel with one thread per output element. The source coordinate is computed as torch's CUDA
// kernels compute it: the ratio per dim in float (double for float64 linear), nearest at
// min(floor(o * r), n - 1), linear blending the two neighbours per dim, outermost dim first.
#include <algorithm>
#include <functional>
#include <sstream>

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

}  // namespace

StatusOr<KernelSource> emit_Resample(const EmitContext& ctx) {
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
