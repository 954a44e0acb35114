// Reflect, replicate and circular pads (F.pad's modes): a gather kernel, one thread per output element;
// each padded dim maps its output coordinate back into the input (mirrored without repeating the edge,
// clamped to the edge, or wrapped around), runs of unpadded dims merge into one.
#include <algorithm>
#include <sstream>

#include "codegen/elementwise_index.h"
#include "codegen/gather_kernel.h"

namespace kforge::codegen {

namespace {

// Statements turning the int64_t coordinate `c` (output coordinate less the pad before) into an input
// coordinate of a dim of n elements.
std::string mapped(ir::OpId op, const std::string& c, int64_t n) {
  const std::string N = std::to_string(n) + "LL";
  switch (op) {
    case ir::OpId::kReflectPad:  // pad < n: one reflection at most
      return "    if (" + c + " < 0) " + c + " = -" + c + ";\n    if (" + c + " >= " + N + ") " + c + " = 2 * (" + N +
             " - 1) - " + c + ";\n";
    case ir::OpId::kReplicatePad:
      return "    " + c + " = " + c + " < 0 ? 0 : (" + c + " >= " + N + " ? " + N + " - 1 : " + c + ");\n";
    default:  // circular: pad <= n
      return "    " + c + " = (" + c + " % " + N + " + " + N + ") % " + N + ";\n";
  }
}

}  // namespace

StatusOr<KernelSource> emit_mode_pad(const EmitContext& ctx) {
  using layout::coord;
  const ir::Shape& in = ctx.in_type(0).shape;
  const ir::Shape& out = ctx.out_type().shape;
  const auto& pad = ctx.node().attrs.ints("pad");
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const layout::MergedPadDims m = layout::merge_pad_dims(in, out, pad);
  if (!m.any_padded()) return layout::memcpy_kernel(ctx, 0, 0, total);
  const layout::Index ix = layout::index_for(std::max(total, ctx.in_type(0).numel()));
  const auto strides = contiguous_strides(m.in);
  std::ostringstream body;
  body << "    int64_t src = 0;\n";
  for (size_t k = 0; k < m.out.size(); ++k) {
    const std::string c = "c" + std::to_string(k);
    body << "    int64_t " << c << " = (int64_t)" << coord(ix, m.out, k, "i");
    if (m.before[k] != 0) body << " - " << m.before[k] << "LL";
    body << ";\n";
    if (m.padded[k]) body << mapped(ctx.node().op, c, m.in[k]);
    body << "    src += " << c;
    if (strides[k] != 1) body << " * " << strides[k] << "LL";
    body << ";\n";
  }
  body << "    out[i] = in0[src];\n";
  return layout::gather_kernel(ctx, ix, body.str(),
                               std::string(ir::op_info(ctx.node().op).name) + " " + ir::shape_str(pad) + " of " +
                                   ir::shape_str(in) + " over merged dims " + ir::shape_str(m.in) + " -> " +
                                   ir::shape_str(m.out));
}

}  // namespace kforge::codegen
