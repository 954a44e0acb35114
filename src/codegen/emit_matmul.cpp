// Matmul and Linear: cuBLAS GEMMs on row-major tensors (C^T = B^T A^T in cuBLAS's column-major
// terms), shapes baked in. torch.matmul semantics: 1-D operands gain a unit dim that the result
// drops, batch dims broadcast. The batch plan, cheapest first:
//   - b has no batch (or only size-1 batch dims): a's batch folds into M, one GEMM
//     ((N*M, K) @ (K, L) for (N, M, K) @ (K, L));
//   - each operand's batch is either complete or absent (all size 1): one strided-batched GEMM,
//     stride 0 for the absent side;
//   - any other broadcast ([B, 1] against [1, H]): a small kernel writes per-batch pointer arrays
//     into ctx->workspace, then one cublasGemmBatchedEx.
// Operands made by permutes in the same kernel (the form gemm_permuted_operands) are read in place: the
// permute's strides give the GEMM's leading dimension, transpose flag and batch strides (or pointers).
// Linear: y[R, O] = x[R, I] W[O, I]^T (+ bias): the bias is broadcast into y first and the GEMM
// accumulates onto it (beta = 1), which rounds once like torch's addmm with a bias epilogue.
// K == 0 (an empty contraction) gives zeros (or the bias) without calling cuBLAS.
#include <sstream>

#include "codegen/emit.h"
#include "codegen/gemm_emit.h"
#include "ir/shape_rules.h"
#include "kernels/gemm_operands.h"

namespace kforge::codegen {

namespace {

int64_t numel_of(const ir::Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

KernelSource empty_kernel(const EmitContext& ctx, const std::string& why) {
  KernelSource src = begin_source(ctx);
  src.code += "// " + why + "\n" + ctx.signature() + " {\n  (void)ctx;\n  (void)bufs;\n  return 0;\n}\n";
  src.launches = 0;
  return src;
}

Status same_dtypes(const EmitContext& ctx, const std::string& what) {
  ir::DType t = ctx.out_type().dtype;
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.in_type(i).dtype != t) {
      return unsupported(what + " with operands of different dtypes (" +
                         std::string(ir::dtype_name(ctx.in_type(i).dtype)) + " and " + std::string(ir::dtype_name(t)) +
                         "); torch refuses them too");
    }
  }
  return Status::ok();
}

std::string block_knob(const EmitContext& ctx) {
  return std::to_string(ctx.kernel.knob(schedule::Knob::kBlock, 256));
}

// The flat batch index `i` of `batch` as an element offset into the operand (a C expression).
std::string batch_offset_expr(const kernels::StridedOperand& op, const ir::Shape& batch, const std::string& i) {
  const size_t own = op.shape.size() >= 2 ? op.shape.size() - 2 : 0;
  std::string expr;
  int64_t step = 1;
  for (size_t j = batch.size(); j-- > 0;) {
    const size_t back = batch.size() - 1 - j;
    if (batch[j] > 1 && back < own && op.shape[own - 1 - back] > 1) {
      const int64_t st = op.strides[own - 1 - back];
      expr += (expr.empty() ? "" : " + ") + std::string("(") + i + " / " + std::to_string(step) + "LL % " +
              std::to_string(batch[j]) + "LL) * " + std::to_string(st) + "LL";
    }
    step *= std::max<int64_t>(batch[j], 1);
  }
  return expr.empty() ? "0LL" : expr;
}

}  // namespace

StatusOr<KernelSource> emit_Matmul(const EmitContext& ctx) {
  const ir::Shape& sa = ctx.in_type(0).shape;
  const ir::Shape& sb = ctx.in_type(1).shape;
  KF_RETURN_IF_ERROR(same_dtypes(ctx, "matmul"));
  if (sa.empty() || sb.empty()) return invalid_argument("matmul needs operands of rank >= 1");
  const int64_t out_numel = ctx.out_type().numel();
  if (out_numel == 0) return empty_kernel(ctx, "the result is empty: nothing to compute");
  KF_ASSIGN_OR_RETURN(gemm::GemmTypes types, gemm::gemm_types(ctx.out_type().dtype, ctx.sched.precision, "matmul"));

  // The operands as stored (through the permutes of the kernel: the form gemm_permuted_operands) and the batch plan.
  const kernels::GemmBatchPlan plan = kernels::gemm_batch_plan(ctx.graph, ctx.kernel);
  if (!plan.ok) return internal_error("kernel " + ctx.kernel.name + ": a matmul no GEMM reads as stored");
  const kernels::StridedOperand& oa = plan.a;
  const kernels::StridedOperand& ob = plan.b;
  const int64_t M = oa.shape[oa.shape.size() - 2];
  const int64_t nb = numel_of(plan.batch);

  KernelSource src = begin_source(ctx, gemm::cublas_headers());
  src.libraries = {"cublas"};
  const std::string T = types.ctype;
  std::ostringstream pre;   // file-scope code (kernels)
  std::ostringstream body;  // the entry function's body
  const std::string A = ctx.ptr(oa.source, false), B = ctx.ptr(ob.source, false), C = ctx.out_ptr();
  if (oa.permutes + ob.permutes > 0) {
    body << "  // Read in place through " << oa.permutes + ob.permutes << " permute(s) (gemm_permuted_operands): a "
         << (plan.la.transposed ? "transposed, " : "") << "lda " << plan.la.ld << "; b "
         << (plan.lb.transposed ? "transposed, " : "") << "ldb " << plan.lb.ld << ".\n";
  }
  if (plan.k == 0) {
    body << "  // Empty contraction (K = 0): the result is all zeros.\n"
         << "  KF_CUDA(cudaMemsetAsync(" << C << ", 0, "
         << out_numel * static_cast<int64_t>(ir::dtype_size(ctx.out_type().dtype)) << "ULL, ctx->stream));\n";
    src.launches = 1;
  } else {
    body << gemm::cublas_handle_prologue(ctx.kernel.name);
    gemm::RowMajorGemm g;
    g.m = plan.m;
    g.n = plan.n;
    g.k = plan.k;
    g.trans_a = plan.la.transposed;
    g.lda = plan.la.ld;
    g.trans_b = plan.lb.transposed;
    g.ldb = plan.lb.ld;
    g.ldc = plan.n;
    if (plan.kind != kernels::GemmBatchPlan::Kind::kPointers) {
      if (plan.kind == kernels::GemmBatchPlan::Kind::kOneGemm) {
        body << "  // b has no batch: a's batch dims fold into M (" << plan.m << " rows), one GEMM.\n";
      } else {
        body << "  // " << nb << " batched GEMMs" << (plan.stride_a == 0 ? " sharing one a (stride 0)" : "")
             << (plan.stride_b == 0 ? " sharing one b (stride 0)" : "") << ".\n";
        g.batch = nb;
        g.stride_a = plan.stride_a;
        g.stride_b = plan.stride_b;
        g.stride_c = M * plan.n;
      }
      g.a = A;
      g.b = B;
      g.c = C;
      const gemm::SplitScratch scratch = gemm::use_split_scratch(g, types, 0, ctx.kernel.name);
      src.workspace_bytes = scratch.workspace_bytes;
      pre << scratch.definition;
      body << scratch.check << gemm::gemm_call(g, types, "  ");
      src.launches = gemm::gemm_launches(g, types);
    } else {
      // Batch dims of no single stride (a broadcast [B, 1] against [1, H], or a permuted batch): per-batch
      // pointer arrays built on the device.
      const ir::Shape batch_a(oa.shape.begin(), oa.shape.end() - 2), batch_b(ob.shape.begin(), ob.shape.end() - 2);
      const size_t ws = gemm::align256(static_cast<size_t>(3 * nb) * sizeof(void*));
      src.workspace_bytes = ws;
      pre << "namespace {\n"
          << "// Per-batch pointers for batch dims " << ir::shape_str(batch_a) << " x " << ir::shape_str(batch_b)
          << " -> " << ir::shape_str(plan.batch) << ".\n"
          << "__global__ void __launch_bounds__(" << block_knob(ctx) << ") " << ctx.kernel.name << "_ptrs(const " << T
          << "* a, const " << T << "* b, " << T << "* c, const void** pa, const void** pb, void** pc) {\n"
          << "  KF_GRID_STRIDE(i, " << nb << "LL) {\n"
          << "    pa[i] = a + " << batch_offset_expr(oa, plan.batch, "i") << ";\n"
          << "    pb[i] = b + " << batch_offset_expr(ob, plan.batch, "i") << ";\n"
          << "    pc[i] = c + i * " << M * plan.n << "LL;\n"
          << "  }\n"
          << "}\n"
          << "}  // namespace\n\n";
      body << "  if (ctx->workspace_bytes < " << ws << "ULL) return kf_fail(2, \"" << ctx.kernel.name
           << ": workspace of %zu bytes is smaller than the " << ws
           << " its pointer arrays need\", ctx->workspace_bytes);\n"
           << "  void** kf_p = static_cast<void**>(ctx->workspace);\n"
           << "  const void** kf_pa = const_cast<const void**>(kf_p);\n"
           << "  const void** kf_pb = kf_pa + " << nb << "LL;\n"
           << "  void** kf_pc = kf_p + " << 2 * nb << "LL;\n"
           << "  " << ctx.kernel.name << "_ptrs<<<kf_grid(" << nb << "LL, " << block_knob(ctx) << "), "
           << block_knob(ctx) << ", 0, ctx->stream>>>(" << A << ", " << B << ", " << C << ", kf_pa, kf_pb, kf_pc);\n"
           << "  KF_LAUNCHED();\n";
      g.a = "kf_pa";
      g.b = "kf_pb";
      g.c = "kf_pc";
      g.batch = nb;
      g.pointer_arrays = true;
      body << gemm::gemm_call(g, types, "  ");
      src.launches = 2;
    }
  }
  src.code += pre.str() + ctx.signature() + " {\n" + body.str() + "  return 0;\n}\n";
  return src;
}

namespace {

// With leave_bias, the GEMM runs with beta = 0 and no bias pass (the caller's epilogue adds it).
StatusOr<KernelSource> emit_linear(const EmitContext& ctx, bool leave_bias) {
  const ir::Shape& sx = ctx.in_type(0).shape;
  const ir::Shape& sw = ctx.in_type(1).shape;
  KF_RETURN_IF_ERROR(same_dtypes(ctx, "linear"));
  if (sw.size() != 2 || sx.empty() || sx.back() != sw[1])
    return invalid_argument("linear: input and weight feature sizes differ");
  const int64_t out_numel = ctx.out_type().numel();
  if (out_numel == 0) return empty_kernel(ctx, "the result is empty: nothing to compute");
  KF_ASSIGN_OR_RETURN(gemm::GemmTypes types, gemm::gemm_types(ctx.out_type().dtype, ctx.sched.precision, "linear"));
  const int64_t O = sw[0];
  const int64_t I = sw[1];
  const int64_t R = out_numel / O;
  if (ctx.has_input(2) && ctx.in_type(2).numel() != O) return invalid_argument("linear: bias has the wrong size");
  const bool has_bias = ctx.has_input(2) && !leave_bias;

  KernelSource src = begin_source(ctx, gemm::cublas_headers());
  src.libraries = {"cublas"};
  const std::string T = types.ctype;
  std::ostringstream pre, body;
  const std::string X = ctx.in_ptr(0), W = ctx.in_ptr(1), Y = ctx.out_ptr();
  const std::string block = block_knob(ctx);
  int64_t launches = 0;
  if (has_bias) {
    pre << "namespace {\n"
        << "// y[r, o] = bias[o]: the GEMM then accumulates onto it (beta = 1).\n"
        << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_bias(const " << T
        << "* __restrict__ bias, " << T << "* __restrict__ y) {\n"
        << "  KF_GRID_STRIDE(i, " << out_numel << "LL) { y[i] = bias[i % " << O << "LL]; }\n"
        << "}\n"
        << "}  // namespace\n\n";
    body << "  " << ctx.kernel.name << "_bias<<<kf_grid(" << out_numel << "LL, " << block << "), " << block
         << ", 0, ctx->stream>>>(" << ctx.in_ptr(2) << ", " << Y << ");\n"
         << "  KF_LAUNCHED();\n";
    ++launches;
  }
  if (I == 0) {
    if (!has_bias) {
      body << "  // Empty contraction (in_features = 0): the result is all zeros.\n"
           << "  KF_CUDA(cudaMemsetAsync(" << Y << ", 0, "
           << out_numel * static_cast<int64_t>(ir::dtype_size(ctx.out_type().dtype)) << "ULL, ctx->stream));\n";
      ++launches;
    }
  } else {
    body << gemm::cublas_handle_prologue(ctx.kernel.name) << "  // y[" << R << ", " << O << "] = x[" << R << ", " << I
         << "] * W[" << O << ", " << I << "]^T" << (has_bias ? " + y" : "") << "\n";
    gemm::RowMajorGemm g;
    g.m = R;
    g.n = O;
    g.k = I;
    g.a = X;
    g.lda = I;
    g.b = W;
    g.trans_b = true;
    g.ldb = I;
    g.c = Y;
    g.ldc = O;
    g.beta = has_bias ? "1" : "0";
    const gemm::SplitScratch scratch = gemm::use_split_scratch(g, types, 0, ctx.kernel.name);
    src.workspace_bytes = scratch.workspace_bytes;
    pre << scratch.definition;
    body << scratch.check << gemm::gemm_call(g, types, "  ");
    launches += gemm::gemm_launches(g, types);
  }
  src.launches = launches;
  src.code += pre.str() + ctx.signature() + " {\n" + body.str() + "  return 0;\n}\n";
  return src;
}

}  // namespace

StatusOr<KernelSource> emit_Linear(const EmitContext& ctx) {
  return emit_linear(ctx, false);
}

StatusOr<KernelSource> emit_linear_epilogue(const EmitContext& ctx) {
  const ir::Graph& gr = ctx.graph;
  const int linear_node = ctx.kernel.nodes.front();
  const ir::Node& linear = gr.nodes()[static_cast<size_t>(linear_node)];
  const ir::ValueIndex result = ctx.node().output;
  if (gr.type(linear.output).shape != gr.type(result).shape || gr.type(linear.output).dtype != gr.type(result).dtype)
    return internal_error("kernel " + ctx.kernel.name + ": the epilogue's result is not the linear's shape and dtype");
  // The GEMM alone, as its own function <name>_gemm, writing x W^T into the epilogue's output.
  schedule::Kernel gemm_kernel = ctx.kernel;
  gemm_kernel.nodes = {linear_node};
  gemm_kernel.name = ctx.kernel.name + "_gemm";
  EmitContext gemm_ctx(ctx, gemm_kernel);
  gemm_ctx.out_value = result;
  KF_ASSIGN_OR_RETURN(KernelSource src, emit_linear(gemm_ctx, true));
  ChainSeed seed;
  seed.value = linear.output;
  const std::string T = ctype(gr.type(result).dtype);
  const bool bias = gemm_ctx.has_input(2);
  if (bias) {
    // The bias of the output feature (the last dim), added in float and rounded to the tensor's type.
    const int64_t O = gemm_ctx.in_type(1).shape[0];
    seed.expr = "(" + T + ")((float)out[i] + (float)linear_bias[i % " + std::to_string(O) + "LL])";
    seed.params.push_back({"const " + T + "* __restrict__ linear_bias", gemm_ctx.in_ptr(2)});
  } else {
    seed.expr = "out[i]";
  }
  KF_RETURN_IF_ERROR(
      append_library_epilogue(ctx, gemm_kernel.name, seed,
                              "The epilogue (linear_epilogue skill): " + std::string(bias ? "the bias, then " : "") +
                                  "the elementwise chain, in place on the GEMM's output",
                              src));
  return src;
}

}  // namespace kforge::codegen
