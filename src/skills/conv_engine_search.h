// conv_engine_search: a cuDNN convolution's first call times several engines, in the order and with
// the filters torch uses to pick one, and keeps the fastest (codegen knob engine_search = N; runtime
// KfCudnnConv::engine_search), as torch does under torch.backends.cudnn.benchmark = True. torch's
// default (and our default) runs the first engine of cuDNN's heuristics that works, which the H200 showed
// can be several times slower than another: cudnnFind's pick ran level1/58, 68 and 70 (3-d transposed
// convs) 2-4x faster than torch's engine (bench/NOTES.md run 6), and lost 1.4-7x elsewhere, so only a
// measurement on the device decides. Timing costs the first call (three runs of each engine);
// later calls run the kept plan.
//
// Legal when: a cuDNN convolution kernel (plain or transposed, NCHW or channels-last) with the knobs
// engine and direct at their defaults, not already searching, and a tolerance that allows another
// engine's rounding (>= 1e-3: cuda-agent yes, kernelbench's 1e-4 no), precision not 3xtf32.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// Engines timed on the first call (torch's first included).
constexpr int64_t kConvEnginesTimed = 8;

// Site: one conv kernel (kernels = {k}).
std::vector<Site> conv_engine_search_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_engine_search(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
