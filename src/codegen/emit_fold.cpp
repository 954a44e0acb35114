// Fold family (F.fold, col2im): one thread per output element (n, c, h, w) sums the window positions
// that cover it, as torch's CUDA col2im does (a gather, so no atomics and a fixed order); accumulated in
// float (double for float64).
#include <algorithm>
#include <sstream>

#include "codegen/gather_kernel.h"
#include "ir/shape_rules.h"

namespace kforge::codegen {

StatusOr<KernelSource> emit_Fold(const EmitContext& ctx) {
  const ir::Attrs& a = ctx.node().attrs;
  const ir::Shape& in = ctx.in_type(0).shape;
  const auto& os_ = a.ints("output_size");
  const auto& k = a.ints("kernel_size");
  const auto& dil = a.ints("dilation");
  const auto& pad = a.ints("padding");
  const auto& st = a.ints("stride");
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const int64_t H = os_[0], W = os_[1];
  const int64_t LH = ir::window_out_size(H, k[0], st[0], pad[0], dil[0], false);
  const int64_t LW = ir::window_out_size(W, k[1], st[1], pad[1], dil[1], false);
  const int64_t L = in.back();
  const int64_t C = ctx.out_type().shape[ctx.out_type().shape.size() - 3];
  const ir::DType t = ctx.out_type().dtype;
  const std::string acc = t == ir::DType::kFloat64 ? "double" : "float";
  const layout::Index ix = layout::index_for(std::max(total, ctx.in_type(0).numel()));
  std::ostringstream body;
  body << "    const int64_t w = (int64_t)i % " << W << "LL, h = ((int64_t)i / " << W << "LL) % " << H
       << "LL, nc = (int64_t)i / " << H * W << "LL;\n"
       << "    const " << ctype(t) << "* col = in0 + nc * " << k[0] * k[1] * L << "LL;  // (n, c): kh * kw rows of "
       << L << "\n"
       << "    " << acc << " v = 0;\n"
       << "    for (int ki = 0; ki < " << k[0] << "; ++ki) {\n"
       << "      const int64_t y = h + " << pad[0] << "LL - (int64_t)ki * " << dil[0] << "LL;\n"
       << "      if (y < 0 || y % " << st[0] << "LL != 0 || y / " << st[0] << "LL >= " << LH << "LL) continue;\n"
       << "      for (int kj = 0; kj < " << k[1] << "; ++kj) {\n"
       << "        const int64_t x = w + " << pad[1] << "LL - (int64_t)kj * " << dil[1] << "LL;\n"
       << "        if (x < 0 || x % " << st[1] << "LL != 0 || x / " << st[1] << "LL >= " << LW << "LL) continue;\n"
       << "        v += (" << acc << ")" << (layout::is_half(t) ? "(float)" : "") << "col[(int64_t)(ki * " << k[1]
       << " + kj) * " << L << "LL + (y / " << st[0] << "LL) * " << LW << "LL + x / " << st[1] << "LL];\n"
       << "      }\n"
       << "    }\n"
       << "    out[i] = " << layout::convert("v", t == ir::DType::kFloat64 ? t : ir::DType::kFloat32, t) << ";\n";
  return layout::gather_kernel(ctx, ix, body.str(),
                               "fold of " + ir::shape_str(in) + " into " + std::to_string(C) + " channels of " +
                                   std::to_string(H) + " x " + std::to_string(W) + " (" + std::to_string(LH) + " x " +
                                   std::to_string(LW) + " windows of " + std::to_string(k[0]) + " x " +
                                   std::to_string(k[1]) + ")");
}

}  // namespace kforge::codegen
