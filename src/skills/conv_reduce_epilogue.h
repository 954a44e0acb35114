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

#include "skills/skill.h"

namespace kforge::skills {

// The channel count up to which the pass's tile (32 positions x C channels of fp32) fits the 48 KiB
// of static shared memory with room for its statistics.
inline constexpr int64_t kMaxChannelConsumerChannels = 352;

// True for a kernel this skill made: a channels-last cuDNN conv (or conv_transpose) kernel whose first
// node is the convolution, then pointwise nodes, one channel consumer (is_channel_consumer), then
// pointwise nodes.
bool is_conv_reduce_epilogue(const ir::Graph& g, const schedule::Kernel& k);

// What this skill can compute in a conv's pass back, reading a float32 tensor [N, C, spatial...]:
//  - kChannels: softmax / log_softmax over dim 1, or sum / mean / amax / amin over dims {1} alone, with
//    1 to kMaxChannelConsumerChannels channels;
//  - kSpatial: sum / mean / amax / amin over every spatial dim (and no other), or an adaptive average
//    pool to size 1, with C a multiple of 4 up to 1024 (threads take 4 channels each) and N <= 65535
//    (a grid dim).
//  - kNorm: instance or batch norm with batch statistics, or group norm, under the same conditions as kSpatial:
//    the statistics come from the rows like a spatial reduction, then the transpose back to NCHW
//    normalizes each value (and computes the chains around the norm) on its way.
//  - kPool: a 2-d or 3-d max or average pool of non-overlapping windows (kernel = stride, no padding), with
//    C up to kMaxChannelConsumerChannels: each window read from the rows once, the pooled tile written
//    to NCHW through the chain after it.
//  - kRowNorm: a layer norm over the last dim alone, of W positions (is_row_norm_width), C a multiple of 4:
//    the transpose back's tile (32 channels x 128 positions) holds whole rows of the last dim, so it
//    normalizes them before it stores them (no NCHW write and read between the conv and the norm).
enum class ConsumerKind { kNone, kChannels, kSpatial, kNorm, kPool, kRowNorm };
// The last-dim lengths kRowNorm takes: divisors of the tile's 128 positions that keep whole 16-byte
// stores (4 to 128, powers of two).
inline bool is_row_norm_width(int64_t w) {
  return w >= 4 && w <= 128 && (w & (w - 1)) == 0;
}
ConsumerKind consumer_kind(const ir::Graph& g, const ir::Node& n);
inline bool is_channel_consumer(const ir::Graph& g, const ir::Node& n) {
  return consumer_kind(g, n) != ConsumerKind::kNone;
}

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
