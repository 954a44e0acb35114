// conv_reduce_epilogue: a softmax, log_softmax or reduction (sum, mean, amax, amin) over the channels
// (dim 1), a reduction over all spatial dims (a global average pool), an instance, group, batch or
// last-dim layer norm, or a pool of non-overlapping windows, of a channels-last
// convolution's result joins the convolution's kernel, and then the elementwise chain after it too. cuDNN leaves the
// result channels-last, where each position's channels are one contiguous row: the pass back to NCHW reads those rows
// once, reduces them and writes the consumer's output, where before the pass back wrote the whole NCHW result and the
// consumer read it again across channel planes (torch.compile's Inductor does the same: one Triton
// reduction over the channels-last conv output). A spatial reduction reads the rows with threads over
// channels, 16 bytes each.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::consumer_kind;
using kernels::ConsumerKind;
using kernels::is_channel_consumer;
using kernels::is_channels_last_conv;
using kernels::is_conv_node;
using kernels::is_conv_reduce_epilogue;
using kernels::is_row_norm_width;
using kernels::kMaxChannelConsumerChannels;

// Legal when either
//  - the producer is a channels-last cuDNN conv kernel (the convolution, maybe with its pointwise
//    epilogue) and the consumer a generated kernel of a pointwise prologue (of the convolution's
//    shape), a channel consumer, and pointwise nodes of the consumer's shape; or
//  - the producer is a kernel this skill made and the consumer a pointwise chain of the producer's
//    result shape and dtype (float32);
// and in both the producer's result is read by the consumer alone and is not a graph output.
// Site: kernels = {conv kernel, consumer kernel}.
std::vector<Site> conv_reduce_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_reduce_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
