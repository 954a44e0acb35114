// The sizes of a GEMM node under the 3xTF32 split (kernels/split_tf32.h), in the terms codegen/gemm_emit.cpp
// emits it with (M, N, K, transposes, stored batches).
#include "kernels/split_tf32.h"

#include "ir/shape_rules.h"
#include "kernels/gemm_operands.h"

namespace kforge::kernels {

namespace {

double numel(const ir::Shape& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return n;
}

}  // namespace

SplitTf32Gemm split_tf32_gemm_of(const ir::Graph& g, const ir::Node& n, const schedule::Kernel* kernel) {
  SplitTf32Gemm out;
  if (n.inputs.size() < 2 || g.type(n.output).dtype != ir::DType::kFloat32) return out;
  const ir::Shape& sa = g.type(n.inputs[0]).shape;
  const ir::Shape& sb = g.type(n.inputs[1]).shape;
  int64_t m = 0, n_out = 0, k = 0, batches_a = 1, batches_b = 1;
  bool trans_a = false, trans_b = false;
  switch (ir::op_info(n.op).family) {
    case ir::OpFamily::kLinear: {  // x [R, I] W[O, I]^T: B transposed
      if (sb.size() != 2) return out;
      k = sb[1];
      m = static_cast<int64_t>(numel(g.type(n.output).shape)) / sb[0];
      n_out = sb[0];
      trans_b = true;
      break;
    }
    case ir::OpFamily::kMatmul: {  // neither transposed; a's batch folds into M when b has none
      if (sa.empty() || sb.empty()) return out;
      const ir::Shape a2 = sa.size() == 1 ? ir::Shape{1, sa[0]} : sa;
      const ir::Shape b2 = sb.size() == 1 ? ir::Shape{sb[0], 1} : sb;
      const double nba = numel(ir::Shape(a2.begin(), a2.end() - 2)), nbb = numel(ir::Shape(b2.begin(), b2.end() - 2));
      const double nb =
          numel(ir::Shape(g.type(n.output).shape.begin(),
                          g.type(n.output).shape.end() - std::min<size_t>(2, g.type(n.output).shape.size())));
      if (kernel != nullptr && !kernel->nodes.empty() && &g.nodes()[static_cast<size_t>(kernel->root())] == &n) {
        // codegen's own batch plan (through the kernel's permutes, gemm_permuted_operands)
        const GemmBatchPlan plan = gemm_batch_plan(g, *kernel);
        if (!plan.ok || plan.kind == GemmBatchPlan::Kind::kPointers) return out;  // exact fp32
        trans_a = plan.la.transposed;
        trans_b = plan.lb.transposed;
        const bool many = plan.kind == GemmBatchPlan::Kind::kStrided;
        batches_a = many && plan.stride_a != 0 ? plan.batches : 1;
        batches_b = many && plan.stride_b != 0 ? plan.batches : 1;
        k = plan.k;
        m = plan.m;
        n_out = plan.n;
        break;
      }
      if (nbb != 1 && !((nba == 1 || nba == nb) && nbb == nb)) return out;  // per-batch pointers: not split
      k = a2.back();
      m = a2[a2.size() - 2];
      n_out = b2.back();
      batches_a = static_cast<int64_t>(nba);
      batches_b = static_cast<int64_t>(nbb);
      break;
    }
    case ir::OpFamily::kEinsum: {
      if (n.inputs.size() != 2) return out;
      auto v = ir::einsum_as_gemm(n.attrs.s("equation"), sa, sb, g.type(n.output).shape);
      if (!v.is_ok()) return out;
      k = v->k;
      m = v->m;
      n_out = v->n;
      trans_a = v->trans_a;
      trans_b = v->trans_b;
      batches_a = batches_b = v->batch;
      break;
    }
    default: return out;
  }
  if (k <= 0) return out;
  out.ok = true;
  out.k = k;
  out.output_aligned = n_out % 4 == 0;
  out.flops = 2.0 * numel(g.type(n.output).shape) * static_cast<double>(k);
  out.operand_bytes = static_cast<double>(g.type(n.inputs[0]).bytes() + g.type(n.inputs[1]).bytes());
  out.output_bytes = static_cast<double>(g.type(n.output).bytes());
  out.chunks = split_tf32_gemm_chunks(m, n_out, k, trans_a, trans_b, batches_a, batches_b);
  return out;
}

}  // namespace kforge::kernels
