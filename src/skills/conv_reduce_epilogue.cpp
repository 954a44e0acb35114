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
