// The forms' predicates and kernel_form's order.
#include "kernels/forms.h"

#include <algorithm>
#include <array>

#include "ir/shape_rules.h"
#include "ir/strided_view.h"
#include "kernels/gemm_operands.h"

namespace kforge::kernels {

namespace {

const ir::Node& node_at(const ir::Graph& g, int n) {
  return g.nodes()[static_cast<size_t>(n)];
}

constexpr std::array<std::string_view, 0
#define KF_FORM(id, name, what) +1
#include "kernels/forms.def"
#undef KF_FORM
                     >
    kFormNames = {
#define KF_FORM(id, name, what) name,
#include "kernels/forms.def"
#undef KF_FORM
};

int consumer_position(const ir::Graph& g, const schedule::Kernel& k) {
  for (size_t i = 1; i < k.nodes.size(); ++i) {
    if (!ir::is_pointwise(node_at(g, k.nodes[i]))) return is_channel_consumer(g, node_at(g, k.nodes[i])) ? int(i) : -1;
  }
  return -1;
}

}  // namespace

std::string_view form_name(KernelForm f) {
  return kFormNames.at(static_cast<size_t>(f));
}

bool is_conv_node(const ir::Graph& g, int n) {
  const auto family = ir::op_info(node_at(g, n).op).family;
  return family == ir::OpFamily::kConv || family == ir::OpFamily::kConvTranspose;
}

bool is_conv_library_kernel(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary &&
         (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose);
}

bool is_channels_last_conv(const ir::Graph& g, const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary &&
         (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose) &&
         k.knob(schedule::Knob::kChannelsLast, 0) == 1 && k.knob(schedule::Knob::kEngine, 0) == 0 &&
         k.knob(schedule::Knob::kDirect, 0) == 0 && !k.nodes.empty() && is_conv_node(g, k.nodes.front());
}

bool is_norm_node(const ir::Graph& g, int n) {
  const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
  return ir::op_info(node.op).family == ir::OpFamily::kNorm && g.type(node.output).dtype == ir::DType::kFloat32 &&
         !node.inputs.empty() && g.type(node.inputs[0]).dtype == ir::DType::kFloat32;
}

bool is_norm_kernel(const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kNormTwoPass;
}

bool is_linear_kernel(const ir::Graph& g, const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary && k.strategy == schedule::Strategy::kCublasGemm && !k.nodes.empty() &&
         g.nodes()[static_cast<size_t>(k.nodes[0])].op == ir::OpId::kLinear;
}

bool is_reduce_kernel(const ir::Graph& g, const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kReduce &&
         ir::op_info(g.nodes()[static_cast<size_t>(k.root())].op).family == ir::OpFamily::kReduce;
}

bool is_scan_kernel(const ir::Graph& g, const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kScan &&
         ir::op_info(g.nodes()[static_cast<size_t>(k.root())].op).family == ir::OpFamily::kScan;
}

bool is_elementwise_loss_kernel(const ir::Graph& g, const schedule::Kernel& k) {
  const ir::Node& root = g.nodes()[static_cast<size_t>(k.root())];
  return k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kLoss &&
         ir::op_info(root.op).family == ir::OpFamily::kLoss && root.op != ir::OpId::kCrossEntropy;
}

bool tail_is_pointwise(const ir::Graph& g, const schedule::Kernel& k) {
  return !k.nodes.empty() &&
         std::all_of(k.nodes.begin() + 1, k.nodes.end(), [&](int n) { return ir::is_pointwise(node_at(g, n)); });
}

std::optional<ir::StridedView> view_in_kernel(const ir::Graph& g, int node, const std::vector<int>& nodes) {
  return ir::view_chain(g, node_at(g, node), [&](const ir::Node& p) {
    const int at = static_cast<int>(&p - g.nodes().data());
    return std::find(nodes.begin(), nodes.end(), at) != nodes.end();
  });
}

bool reads_through_views(const ir::Graph& g, const std::vector<int>& nodes) {
  for (int n : nodes) {
    const ir::Node& node = node_at(g, n);
    if (ir::is_pointwise(node)) continue;
    if (!ir::is_view_op(node.op)) return false;
    // A view of a value the kernel computes would need that value at other positions than its own.
    const ir::Node* p = g.producer(node.inputs[0]);
    const int at = p == nullptr ? -1 : static_cast<int>(p - g.nodes().data());
    if (p != nullptr && !ir::is_view_op(p->op) && std::find(nodes.begin(), nodes.end(), at) != nodes.end())
      return false;
    if (!view_in_kernel(g, n, nodes)) return false;
  }
  return true;
}

bool views_read_coalesced(const ir::Graph& g, const std::vector<int>& nodes) {
  for (int n : nodes) {
    const ir::Node& node = node_at(g, n);
    if (ir::is_pointwise(node) || !ir::is_view_op(node.op)) continue;
    auto view = view_in_kernel(g, n, nodes);
    if (!view || !ir::walks_innermost_contiguously(*view)) return false;
  }
  return true;
}

bool has_pointwise_prologue(const ir::Graph& g, const schedule::Kernel& k) {
  return k.nodes.size() > 1 && reads_through_views(g, std::vector<int>(k.nodes.begin(), k.nodes.end() - 1));
}

bool is_conv_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_conv_library_kernel(k) && k.nodes.size() > 1 && is_conv_node(g, k.nodes[0]) && tail_is_pointwise(g, k);
}

bool is_norm_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_norm_kernel(k) && k.nodes.size() > 1 && is_norm_node(g, k.nodes[0]) && tail_is_pointwise(g, k);
}

bool is_linear_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_linear_kernel(g, k) && k.nodes.size() > 1 && tail_is_pointwise(g, k);
}

bool is_reduce_prologue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_reduce_kernel(g, k) && has_pointwise_prologue(g, k);
}

bool is_scan_prologue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_scan_kernel(g, k) && has_pointwise_prologue(g, k);
}

bool is_loss_prologue(const ir::Graph& g, const schedule::Kernel& k) {
  return is_elementwise_loss_kernel(g, k) && has_pointwise_prologue(g, k);
}

bool is_scan_reverse(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.strategy != schedule::Strategy::kScan || k.nodes.size() != 3)
    return false;
  auto op = [&](int i) { return g.nodes()[static_cast<size_t>(k.nodes[static_cast<size_t>(i)])].op; };
  return op(0) == ir::OpId::kFlip && ir::op_info(op(1)).family == ir::OpFamily::kScan && op(2) == ir::OpId::kFlip;
}

bool is_scan_exclusive(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.strategy != schedule::Strategy::kScan || k.nodes.size() != 4)
    return false;
  int slices = 0, fulls = 0, scans = 0;
  for (int n : k.nodes) {
    const auto op = g.nodes()[static_cast<size_t>(n)].op;
    slices += op == ir::OpId::kSlice;
    fulls += op == ir::OpId::kFull;
    scans += ir::op_info(op).family == ir::OpFamily::kScan;
  }
  return slices == 1 && fulls == 1 && scans == 1 && g.nodes()[static_cast<size_t>(k.nodes.back())].op == ir::OpId::kCat;
}

ConsumerKind consumer_kind(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || n.inputs[0] == ir::kNoValue) return ConsumerKind::kNone;
  const ir::TensorType& in = g.type(n.inputs[0]);
  if (in.dtype != ir::DType::kFloat32 || g.type(n.output).dtype != ir::DType::kFloat32 || in.shape.size() < 3)
    return ConsumerKind::kNone;
  const int64_t channels = in.shape[1];
  const auto rank = static_cast<int64_t>(in.shape.size());
  const bool channel_tile = channels >= 1 && channels <= kMaxChannelConsumerChannels;
  const bool channel_quads = channels >= 4 && channels % 4 == 0 && channels <= 1024 && in.shape[0] <= 65535;
  switch (n.op) {
    case ir::OpId::kSoftmax:
    case ir::OpId::kLogSoftmax: {
      const int64_t d = n.attrs.i("dim");
      return (d == 1 || d == 1 - rank) && channel_tile ? ConsumerKind::kChannels : ConsumerKind::kNone;
    }
    case ir::OpId::kSum:
    case ir::OpId::kMean:
    case ir::OpId::kAmax:
    case ir::OpId::kAmin: {
      auto dims = ir::reduction_dims(n.attrs.ints("dims"), in.shape.size());
      if (!dims.is_ok()) return ConsumerKind::kNone;
      if (*dims == std::vector<int64_t>{1}) return channel_tile ? ConsumerKind::kChannels : ConsumerKind::kNone;
      std::vector<int64_t> spatial;
      for (int64_t d = 2; d < rank; ++d) spatial.push_back(d);
      return *dims == spatial && channel_quads ? ConsumerKind::kSpatial : ConsumerKind::kNone;
    }
    case ir::OpId::kBatchNorm:
      return n.attrs.b("training") && channel_quads ? ConsumerKind::kNorm : ConsumerKind::kNone;
    case ir::OpId::kInstanceNorm:
      return n.attrs.b("use_input_stats") && channel_quads ? ConsumerKind::kNorm : ConsumerKind::kNone;
    case ir::OpId::kGroupNorm: {
      const int64_t groups = n.attrs.i("num_groups");
      return groups > 0 && channels % groups == 0 && channel_quads ? ConsumerKind::kNorm : ConsumerKind::kNone;
    }
    case ir::OpId::kLayerNorm: {
      const auto shape = n.attrs.ints("normalized_shape");
      return shape.size() == 1 && shape[0] == in.shape.back() && is_row_norm_width(shape[0]) && channels % 4 == 0
                 ? ConsumerKind::kRowNorm
                 : ConsumerKind::kNone;
    }
    case ir::OpId::kMaxPool:
    case ir::OpId::kAvgPool: {
      // Non-overlapping 2-d or 3-d windows (kernel = stride, no padding, dilation 1, floor mode).
      if ((rank != 4 && rank != 5) || !channel_tile) return ConsumerKind::kNone;
      const auto k = n.attrs.ints("kernel_size"), st = n.attrs.ints("stride"), pad = n.attrs.ints("padding");
      const size_t sp = static_cast<size_t>(rank - 2);
      bool plain = k.size() == sp && st == k && pad == std::vector<int64_t>(sp, 0) && !n.attrs.b("ceil_mode");
      if (n.op == ir::OpId::kMaxPool) plain = plain && n.attrs.ints("dilation") == std::vector<int64_t>(sp, 1);
      if (n.op == ir::OpId::kAvgPool) plain = plain && n.attrs.is_null("divisor_override");
      if (!plain) return ConsumerKind::kNone;
      int64_t rows = 1;  // output rows: blocks along grid y
      for (size_t d = 0; d + 1 < sp; ++d) rows *= in.shape[2 + d] / k[d];
      return in.shape[0] <= 65535 && rows <= 65535 ? ConsumerKind::kPool : ConsumerKind::kNone;
    }
    case ir::OpId::kAdaptiveAvgPool: {
      const auto size = n.attrs.ints("output_size");
      const bool global = static_cast<int64_t>(size.size()) == rank - 2 &&
                          std::all_of(size.begin(), size.end(), [](int64_t v) { return v == 1; });
      return global && channel_quads ? ConsumerKind::kSpatial : ConsumerKind::kNone;
    }
    default: return ConsumerKind::kNone;
  }
}

bool is_conv_reduce_epilogue(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.nodes.size() < 2 || !is_channels_last_conv(g, k)) return false;
  const int at = consumer_position(g, k);
  if (at < 0) return false;
  for (size_t i = static_cast<size_t>(at) + 1; i < k.nodes.size(); ++i) {
    if (!ir::is_pointwise(node_at(g, k.nodes[i]))) return false;
  }
  return true;
}

KernelForm kernel_form(const ir::Graph& g, const schedule::Kernel& k) {
  using schedule::Strategy;
  const bool several = k.nodes.size() > 1;
  if (k.strategy == Strategy::kConstantFill) return KernelForm::kConstantFill;
  if (several && is_conv_epilogue(g, k)) return KernelForm::kConvEpilogue;
  if (several && is_conv_reduce_epilogue(g, k)) return KernelForm::kConvReduceEpilogue;
  if (several && is_norm_epilogue(g, k)) return KernelForm::kNormEpilogue;
  if (several && is_linear_epilogue(g, k)) return KernelForm::kLinearEpilogue;
  // Pointwise chains (ir::is_pointwise), whatever their root's family (batch_norm_inference).
  if (k.strategy == Strategy::kElementwise) return KernelForm::kElementwiseChain;
  if (several && is_reduce_prologue(g, k)) return KernelForm::kReducePrologue;
  if (several && is_scan_prologue(g, k)) return KernelForm::kScanPrologue;
  if (several && is_loss_prologue(g, k)) return KernelForm::kLossPrologue;
  if (several && is_scan_reverse(g, k)) return KernelForm::kScanReverse;
  if (several && is_scan_exclusive(g, k)) return KernelForm::kScanExclusive;
  if (several && is_gemm_permuted_operands(g, k)) return KernelForm::kGemmPermutedOperands;
  if (several && !ir::is_elementwise(ir::op_info(node_at(g, k.root()).op).family)) return KernelForm::kUnknown;
  return KernelForm::kOneOp;
}

}  // namespace kforge::kernels
