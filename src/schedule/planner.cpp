// One kernel per node; reshapes become aliases; GEMM-like ops go to cuBLAS, convolutions to cuDNN.
#include "schedule/planner.h"

namespace kforge::schedule {

DefaultStrategy default_strategy(const ir::Graph& g, const ir::Node& node) {
  using ir::OpFamily;
  switch (ir::op_info(node.op).family) {
    case OpFamily::kReshape: return {Impl::kAlias, "alias"};
    case OpFamily::kMatmul:
    case OpFamily::kLinear: return {Impl::kLibrary, "cublas_gemm"};
    case OpFamily::kConv: return {Impl::kLibrary, "cudnn_conv"};
    case OpFamily::kConvTranspose: return {Impl::kLibrary, "cudnn_conv_transpose"};
    case OpFamily::kAttention: return {Impl::kLibrary, "cublas_attention"};
    case OpFamily::kUnary:
    case OpFamily::kCast:
    case OpFamily::kBinary:
    case OpFamily::kWhere:
    case OpFamily::kCompare:
    case OpFamily::kLogical:
    case OpFamily::kFull: return {Impl::kGenerated, "elementwise"};
    case OpFamily::kReduce:
    case OpFamily::kArgReduce: return {Impl::kGenerated, "reduce"};
    case OpFamily::kSoftmax: return {Impl::kGenerated, "row_softmax"};
    case OpFamily::kNorm: return {Impl::kGenerated, "norm_two_pass"};
    case OpFamily::kScan: return {Impl::kGenerated, "scan"};
    case OpFamily::kLoss:
    case OpFamily::kTripletLoss: return {Impl::kGenerated, "loss"};
    case OpFamily::kPool:
    case OpFamily::kAdaptivePool: return {Impl::kGenerated, "pool"};
    case OpFamily::kEinsum: return {Impl::kGenerated, "einsum_direct"};
    case OpFamily::kPermute:
    case OpFamily::kExpand:
    case OpFamily::kSlice:
    case OpFamily::kSelect:
    case OpFamily::kFlip:
    case OpFamily::kCat:
    case OpFamily::kDiag:
    case OpFamily::kTriangle:
    case OpFamily::kIndex:
    case OpFamily::kUnfold:
    case OpFamily::kPad:
    case OpFamily::kResample:
    case OpFamily::kFold: return {Impl::kGenerated, "gather"};
    case OpFamily::kOrder:
    case OpFamily::kCumExtreme: return {Impl::kGenerated, "order"};
    case OpFamily::kScatter: return {Impl::kGenerated, "scatter"};
  }
  (void)g;
  return {Impl::kGenerated, "elementwise"};
}

Schedule plan_one_kernel_per_op(const ir::Graph& g, const PlanOptions& options) {
  Schedule s;
  s.precision = options.precision;
  s.tolerance = options.tolerance;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const ir::Node& node = g.nodes()[n];
    auto d = default_strategy(g, node);
    Kernel k;
    k.name = "k" + std::to_string(n) + "_" + ir::op_info(node.op).name;
    k.nodes = {static_cast<int>(n)};
    k.impl = d.impl;
    k.strategy = d.strategy;
    if (d.impl == Impl::kGenerated) k.knobs["block"] = 256;
    s.kernels.push_back(std::move(k));
  }
  return s;
}

}  // namespace kforge::schedule
