// conv_channels_last: a cuDNN convolution (or transposed one, with or without its conv_epilogue
// chain) runs on channels-last copies of its input and weight, and its result comes back to NCHW in
// one tiled pass that also adds the bias and computes the epilogue (codegen knob channels_last = 1).
// cuDNN's engines for channels-last tensors run fp32 convs in TF32 1.3-2.1x faster than for NCHW ones
// on the H200 (bench/NOTES.md run 6, the layout probe); it is torch.compile's layout choice for convs.
// The price: the input and weight transposed (a read and a write of each) and, without a bias or
// epilogue pass to replace, a read and a write of the output; scratch for the three copies.
//
// Legal when: the protocol's tolerance allows TF32 differences (>= 1e-3: another engine than eager's,
// so other rounding; never under kernelbench's 1e-4), precision not 3xtf32, float32 tensors, one
// group, 3 spatial dims, a cuDNN path (not an empty input; for conv_transpose output_padding <
// stride), the knobs engine and direct at their defaults, the copies under 8 GiB, and the conv's
// FLOPs at least kMinFlopsPerExtraByte per byte the transposes add (level1/63, 16 input channels and
// an 8.5 GB output, has 4). Only 3-d convs: in run 6 on the H200 (bench/NOTES.md) the whole-program
// times with this skill against torch's NCHW engine were 2.5x faster on level1/60 and 66 (3-d) and
// 1.09-1.15x on level2/3 and 49 (3-d transposed), but 0.79-1.11x on seventeen 1-d and 2-d convs (all but
// the first figure against run 5's times on the NCHW engine: across two runs of the same harness): the
// probe's 1.3-2.1x faster channels-last engines did not survive the transposes there. The codegen
// knob (channels_last = 1) still runs any 1-3-d conv channels-last, for experiments and the agent.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

constexpr double kMinFlopsPerExtraByte = 40;
constexpr int64_t kMaxChannelsLastScratch = int64_t{8} << 30;

// Site: one conv kernel (kernels = {k}).
std::vector<Site> conv_channels_last_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_channels_last(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
