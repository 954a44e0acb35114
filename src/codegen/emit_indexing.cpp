// Indexing families (embedding, index_select, gather; unfold; constant_pad): gather kernels.
#include "codegen/emit.h"

namespace kforge::codegen {

StatusOr<KernelSource> emit_Index(const EmitContext& ctx) {
  return unsupported("code generation for " + ir::describe(ctx.graph, ctx.node()) + " is not written yet");
}

StatusOr<KernelSource> emit_Unfold(const EmitContext& ctx) {
  return unsupported("code generation for " + ir::describe(ctx.graph, ctx.node()) + " is not written yet");
}

StatusOr<KernelSource> emit_Pad(const EmitContext& ctx) {
  return unsupported("code generation for " + ir::describe(ctx.graph, ctx.node()) + " is not written yet");
}

}  // namespace kforge::codegen
