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
// group, 1 to 3 spatial dims, a cuDNN path (not an empty input; for conv_transpose output_padding <
// stride), the knobs engine and direct at their defaults, the copies under 8 GiB, and the conv's
// FLOPs at least kMinFlopsPerExtraByte per byte the transposes add (level1/63, 16 input channels and
// an 8.5 GB output, has 4). History (bench/NOTES.md): run 6 kept it to 3-d convs, where it ran
// level1/60 and 66 2.5x faster, because on seventeen 1-d and 2-d convs our first transposes (32x32
// scalar tiles, half Inductor's rate) ate the engine's gain (0.79-1.11x); with 16-byte tiles and a
// gather for few channels, run 7's kernel profile put 2-d convs at or below NCHW and near compile.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

constexpr double kMinFlopsPerExtraByte = 40;
constexpr int64_t kMaxChannelsLastScratch = int64_t{8} << 30;

// Site: one conv kernel (kernels = {k}).
std::vector<Site> conv_channels_last_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_channels_last(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
