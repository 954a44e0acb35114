// conv_reduce_epilogue: a softmax, log_softmax or reduction (sum, mean, amax, amin) over the channels
// (dim 1) of a channels-last convolution's result joins the convolution's kernel, and then the
// elementwise chain after it too. cuDNN leaves the result channels-last, where each position's
// channels are one contiguous row: the pass back to NCHW reads those rows once, reduces them and
// writes the consumer's output, where before the pass back wrote the whole NCHW result and the
// consumer read it again across channel planes (torch.compile's Inductor does the same: one Triton
// reduction over the channels-last conv output).
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// The channel count up to which the pass's tile (32 positions x C channels of fp32) fits the 48 KiB
// of static shared memory with room for its statistics.
inline constexpr int64_t kMaxChannelConsumerChannels = 352;

// True for a kernel this skill made: a channels-last cuDNN conv (or conv_transpose) kernel whose first
// node is the convolution, then pointwise nodes, one channel consumer (is_channel_consumer), then
// pointwise nodes.
bool is_conv_reduce_epilogue(const ir::Graph& g, const schedule::Kernel& k);

// A node this skill can compute in a conv's pass back: softmax / log_softmax over dim 1, or sum /
// mean / amax / amin over dims {1} alone, of a float32 tensor of rank >= 3 with 1 to
// kMaxChannelConsumerChannels channels.
bool is_channel_consumer(const ir::Graph& g, const ir::Node& n);

// Legal when either
//  - the producer is a channels-last cuDNN conv kernel (the convolution, maybe with its pointwise
//    epilogue) and the consumer a generated kernel whose last node is a channel consumer and whose
//    other nodes are a pointwise prologue, all of the convolution's shape; or
//  - the producer is a kernel this skill made and the consumer a pointwise chain of the producer's
//    result shape and dtype (float32);
// and in both the producer's result is read by the consumer alone and is not a graph output.
// Site: kernels = {conv kernel, consumer kernel}.
std::vector<Site> conv_reduce_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_reduce_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
