// conv_reduce_epilogue: legality and the merge of a channels-last convolution kernel with what reads its
// result (a reduction or softmax over channels, a spatial reduction, a norm, a last-dim layer norm, a
// pool), and of that kernel
// with the elementwise chain after it.
#include "skills/conv_reduce_epilogue.h"

#include <algorithm>

#include "ir/shape_rules.h"
#include "skills/epilogue_rules.h"

namespace kforge::skills {

namespace {

const ir::Node& node_at(const ir::Graph& g, int n) {
  return g.nodes()[static_cast<size_t>(n)];
}

bool is_conv_node(const ir::Graph& g, int n) {
  const auto family = ir::op_info(node_at(g, n).op).family;
  return family == ir::OpFamily::kConv || family == ir::OpFamily::kConvTranspose;
}

// A cuDNN conv kernel on the channels-last path (torch's engine), its first node the convolution.
bool is_channels_last_conv(const ir::Graph& g, const schedule::Kernel& k) {
  return k.impl == schedule::Impl::kLibrary && (k.strategy == "cudnn_conv" || k.strategy == "cudnn_conv_transpose") &&
         k.knob("channels_last", 0) == 1 && k.knob("engine", 0) == 0 && k.knob("direct", 0) == 0 && !k.nodes.empty() &&
         is_conv_node(g, k.nodes.front());
}

// The position of the channel consumer in k's nodes, or -1.
int consumer_position(const ir::Graph& g, const schedule::Kernel& k) {
  for (size_t i = 1; i < k.nodes.size(); ++i) {
    if (!ir::is_pointwise(node_at(g, k.nodes[i]))) return is_channel_consumer(g, node_at(g, k.nodes[i])) ? int(i) : -1;
  }
  return -1;
}

ir::ValueIndex result_of(const ir::Graph& g, const schedule::Kernel& k) {
  return node_at(g, k.root()).output;
}

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  const int n = static_cast<int>(s.kernels.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer >= consumer)
    return "the conv kernel must run before its consumer";
  const auto& p = s.kernels[static_cast<size_t>(producer)];
  const auto& c = s.kernels[static_cast<size_t>(consumer)];
  if (!is_channels_last_conv(g, p)) return "the producer must be a channels-last cuDNN conv kernel";
  const ir::TensorType& conv_out = g.type(node_at(g, p.nodes.front()).output);
  if (conv_out.dtype != ir::DType::kFloat32) return "the convolution's result is not float32";
  if (conv_out.shape.size() < 3) return "the convolution has no spatial dims";
  if (is_conv_reduce_epilogue(g, p)) {
    // Second form: the elementwise chain after the reduction.
    if (!is_pointwise_chain(g, c)) return "after the channel consumer only an elementwise chain joins";
    const ir::TensorType& pt = g.type(result_of(g, p));
    const ir::TensorType& ct = g.type(result_of(g, c));
    if (pt.shape != ct.shape || ct.dtype != ir::DType::kFloat32)
      return "the chain's result (" + ir::shape_str(ct.shape) + ") is not the channel consumer's shape (" +
             ir::shape_str(pt.shape) + ") in float32";
    return kept_for_reader_alone(g, result_of(g, p), c, "the producer's", "the consumer");
  }
  if (!tail_is_pointwise(g, p)) return "the producer must be the convolution with at most a pointwise epilogue";
  if (c.impl != schedule::Impl::kGenerated || c.nodes.empty()) return "the consumer must be a generated kernel";
  size_t at = 0;
  while (at < c.nodes.size() && ir::is_pointwise(node_at(g, c.nodes[at]))) ++at;
  if (at == c.nodes.size() || !is_channel_consumer(g, node_at(g, c.nodes[at])))
    return "the consumer's first node past its pointwise prologue is not a softmax or a sum, mean, amax or amin "
           "over the channels (dim 1) of at most " +
           std::to_string(kMaxChannelConsumerChannels) +
           " float32 channels, nor such a reduction (or a global average pool) over every spatial dim, nor an "
           "instance, group or batch norm (batch statistics), nor a layer norm over a last dim of 4, 8, 16, 32, 64 or "
           "128, "
           "nor a 2-d or 3-d pool of "
           "non-overlapping windows";
  for (size_t i = 0; i < at; ++i) {
    const ir::Node& pn = node_at(g, c.nodes[i]);
    if (g.type(pn.output).shape != conv_out.shape) return "the consumer's prologue changes the convolution's shape";
  }
  const ir::Node& r = node_at(g, c.nodes[at]);
  if (g.type(r.inputs[0]).shape != conv_out.shape) return "the channel consumer's input is not the convolution's shape";
  for (size_t i = at + 1; i < c.nodes.size(); ++i) {
    const ir::Node& tn = node_at(g, c.nodes[i]);
    if (!ir::is_pointwise(tn) || g.type(tn.output).shape != g.type(r.output).shape)
      return "after the channel consumer the consumer kernel may only hold pointwise nodes of its shape";
  }
  return kept_for_reader_alone(g, result_of(g, p), c, "the producer's", "the consumer");
}

}  // namespace

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

std::vector<Site> conv_reduce_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal, [](const std::string& p, const std::string& c) {
    return c + " computed in " + p + "'s pass over the channels-last result";
  });
}

StatusOr<schedule::Schedule> conv_reduce_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("conv_reduce_epilogue takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("conv_reduce_epilogue: " + why);
  return merge_epilogue(s, site, "conv_reduce_epilogue");
}

}  // namespace kforge::skills
