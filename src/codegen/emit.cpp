// EmitContext helpers, literal formatting and the family dispatch of the code generator.
#include "codegen/emit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "codegen/special_math.h"
#include "kernels/forms.h"

namespace kforge::codegen {

std::string ctype(ir::DType t) {
  return std::string(ir::dtype_c_type(t));
}

std::string EmitContext::ptr(ir::ValueIndex v, bool writable) const {
  std::string t = ctype(graph.type(v).dtype);
  auto& ops = *operands_;
  auto it = std::find(ops.begin(), ops.end(), v);
  const size_t slot = static_cast<size_t>(it - ops.begin());
  if (it == ops.end()) ops.push_back(v);
  return std::string("((") + (writable ? "" : "const ") + t + "*)bufs[" + std::to_string(slot) + "])";
}

std::string EmitContext::in_ptr(size_t i) const {
  return ptr(node().inputs.at(i), false);
}
std::string EmitContext::out_ptr() const {
  return ptr(out_value != ir::kNoValue ? out_value : node().output, true);
}

std::string EmitContext::signature() const {
  return "extern \"C\" int " + kernel.name + "(KfContext* ctx, void* const* bufs)";
}

std::string float_literal(double v) {
  // INFINITY and NAN (math.h, which kforge_runtime.cuh includes) are float constant expressions; a
  // finite double beyond float's range rounds to infinity, as torch's conversion does.
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "(NAN)";
  if (std::isinf(f)) return f > 0 ? "(INFINITY)" : "(-INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

std::string double_literal(double v) {
  if (std::isnan(v)) return "((double)NAN)";
  if (std::isinf(v)) return v > 0 ? "((double)INFINITY)" : "(-(double)INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "(" + s + ")";
}

KernelSource begin_source(const EmitContext& ctx, const std::string& headers) {
  KernelSource src;
  src.name = ctx.kernel.name;
  src.file_name = ctx.kernel.name + ".cu";
  src.code = "// kforge kernel " + ctx.kernel.name + ": " + ir::describe(ctx.graph, ctx.node()) + "\n" +
             "#include \"kforge_runtime.cuh\"\n" + headers + "\n";
  src.launches = 1;
  return src;
}

namespace {

StatusOr<KernelSource> emit_kernel_of_form(const EmitContext& ctx) {
  // One switch over the catalogue's forms (kernels/forms.def); one-op kernels by their family.
  switch (kernels::kernel_form(ctx.graph, ctx.kernel)) {
    case kernels::KernelForm::kConstantFill: return emit_constant_fill(ctx);
    case kernels::KernelForm::kConvEpilogue: return emit_conv_epilogue(ctx);
    case kernels::KernelForm::kConvReduceEpilogue: return emit_conv_reduce_epilogue(ctx);
    case kernels::KernelForm::kNormEpilogue: return emit_norm_epilogue(ctx);
    case kernels::KernelForm::kLinearEpilogue: return emit_linear_epilogue(ctx);
    case kernels::KernelForm::kElementwiseChain: return emit_elementwise_chain(ctx);
    case kernels::KernelForm::kReducePrologue: return emit_Reduce(ctx);
    case kernels::KernelForm::kScanPrologue:
    case kernels::KernelForm::kScanReverse:
    case kernels::KernelForm::kScanExclusive: return emit_Scan(ctx);
    case kernels::KernelForm::kLossPrologue: return emit_Loss(ctx);
    case kernels::KernelForm::kGemmPermutedOperands: return emit_Matmul(ctx);
    case kernels::KernelForm::kUnknown:
      // Any other emitter would silently drop the nodes past its own.
      return unsupported("kernel " + ctx.kernel.name + " fuses " + std::to_string(ctx.kernel.nodes.size()) +
                         " nodes into a " + std::string(ir::family_name(ir::op_info(ctx.node().op).family)) +
                         " kernel; only elementwise chains can be fused so far");
    case kernels::KernelForm::kOneOp: break;
  }
  switch (ir::op_info(ctx.node().op).family) {
#define KF_FAMILY(name)       \
  case ir::OpFamily::k##name: \
    return emit_##name(ctx);
#include "ir/op_families.def"
#undef KF_FAMILY
  }
  return internal_error("no emitter for the family of " + ir::describe(ctx.graph, ctx.node()));
}

}  // namespace

StatusOr<KernelSource> emit_kernel(const EmitContext& ctx) {
  KF_ASSIGN_OR_RETURN(KernelSource src, emit_kernel_of_form(ctx));
  src.code = with_special_math(src.code);  // the special functions' helpers the code calls
  return src;
}

}  // namespace kforge::codegen
