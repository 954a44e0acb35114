// One kernel per node; reshapes become aliases; GEMM-like ops go to cuBLAS, convolutions and recurrent layers to
// cuDNN, Fourier transforms to cuFFT.
#include "schedule/planner.h"

namespace kforge::schedule {

DefaultStrategy default_strategy(const ir::Graph& g, const ir::Node& node) {
  using ir::OpFamily;
  switch (ir::op_info(node.op).family) {
    case OpFamily::kReshape: return {Impl::kAlias, Strategy::kAlias};
    case OpFamily::kMatmul:
    case OpFamily::kLinear: return {Impl::kLibrary, Strategy::kCublasGemm};
    case OpFamily::kConv: return {Impl::kLibrary, Strategy::kCudnnConv};
    case OpFamily::kConvTranspose: return {Impl::kLibrary, Strategy::kCudnnConvTranspose};
    case OpFamily::kAttention: return {Impl::kLibrary, Strategy::kCublasAttention};
    case OpFamily::kRecurrent: return {Impl::kLibrary, Strategy::kCudnnRnn};
    case OpFamily::kFft: return {Impl::kLibrary, Strategy::kCufftTransform};
    case OpFamily::kUnary:
    case OpFamily::kCast:
    case OpFamily::kBinary:
    case OpFamily::kWhere:
    case OpFamily::kCompare:
    case OpFamily::kLogical:
    case OpFamily::kFull: return {Impl::kGenerated, Strategy::kElementwise};
    case OpFamily::kReduce:
    case OpFamily::kArgReduce: return {Impl::kGenerated, Strategy::kReduce};
    case OpFamily::kSoftmax: return {Impl::kGenerated, Strategy::kRowSoftmax};
    case OpFamily::kNorm: return {Impl::kGenerated, Strategy::kNormTwoPass};
    case OpFamily::kScan: return {Impl::kGenerated, Strategy::kScan};
    case OpFamily::kLoss:
    case OpFamily::kTripletLoss: return {Impl::kGenerated, Strategy::kLoss};
    case OpFamily::kPool:
    case OpFamily::kAdaptivePool: return {Impl::kGenerated, Strategy::kPool};
    case OpFamily::kEinsum: return {Impl::kGenerated, Strategy::kEinsumDirect};
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
    case OpFamily::kFold: return {Impl::kGenerated, Strategy::kGather};
    case OpFamily::kOrder:
    case OpFamily::kCumExtreme: return {Impl::kGenerated, Strategy::kOrder};
    case OpFamily::kScatter: return {Impl::kGenerated, Strategy::kScatter};
  }
  (void)g;
  return {Impl::kGenerated, Strategy::kElementwise};
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
    if (d.impl == Impl::kGenerated) k.knobs[Knob::kBlock] = 256;
    s.kernels.push_back(std::move(k));
  }
  return s;
}

}  // namespace kforge::schedule
