// The constant fill (strategy "constant_fill", from the constant_output skill): one grid-stride kernel
// stores the constant the value ranges prove into the kernel's output. The absorbed producer nodes
// are not computed; the inputs and parameters they would have read are accepted and left unread.
#include <sstream>

#include "codegen/emit.h"
#include "ir/value_range.h"

namespace kforge::codegen {

StatusOr<KernelSource> emit_constant_fill(const EmitContext& ctx) {
  const ir::Graph& g = ctx.graph;
  const ir::ValueIndex out = ctx.node().output;
  // The schedule may come from a file: the constant is proved here again, never taken on trust.
  const ir::ValueRange range = ir::value_ranges(g)[static_cast<size_t>(out)];
  if (!range.is_point()) {
    return invalid_argument("kernel " + ctx.kernel.name + " fills " + g.value(out).id +
                            " with a constant, but its value range is " + range.str() +
                            ", not one value; plan it without constant_fill");
  }
  const ir::DType t = ctx.out_type().dtype;
  const std::string value = t == ir::DType::kFloat64 ? double_literal(range.lo) : float_literal(range.lo);
  const int64_t n = ctx.out_type().numel();
  KernelSource src = begin_source(ctx);
  src.code = src.code.substr(0, src.code.find('\n') + 1) + "// constant fill: every element is " + value +
             " for every input (value ranges); " + std::to_string(ctx.kernel.nodes.size() - 1) +
             " producer nodes are not computed\n" + src.code.substr(src.code.find('\n') + 1);
  if (n == 0) {
    src.code += ctx.signature() + " { return 0; }\n";
    src.launches = 0;
    return src;
  }
  const int block = static_cast<int>(ctx.kernel.knob(schedule::Knob::kBlock, 256));
  const std::string c = ctype(t);
  std::ostringstream os;
  os << "namespace {\n"
     << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_kernel(" << c
     << "* __restrict__ out) {\n"
     << "  KF_GRID_STRIDE(i, " << n << "LL) { out[i] = (" << c << ")" << value << "; }\n"
     << "}\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  " << ctx.kernel.name << "_kernel<<<kf_grid(" << n << "LL, " << block << "), " << block
     << ", 0, ctx->stream>>>(" << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  src.code += os.str();
  return src;
}

}  // namespace kforge::codegen
