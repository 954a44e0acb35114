// constant_output: a graph output that the value ranges (ir/value_range.h) prove constant is written as
// a fill of that constant, and the kernels that only fed it no longer run.
//
// What it assumes: the ranges bound every element that is not NaN, so the rewrite is exact for
// every input on which the reference's output has no NaN. Where the reference's output is NaN (a
// NaN input or parameter, or a NaN made upstream, e.g. inf - inf after a convolution overflows
// float), the fill still writes the constant. Infinities are covered (clamp(-inf, 0, 1) = 0).
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// A kernel of strategy constant_fill fills its root's output with the constant its range proves. Its
// other nodes (the dead producers it absorbed) are not computed; codegen proves the constant again.

// Legal when: a graph output has a point range (float32 or float64); the node making it is the root
// of its kernel, which is not a constant fill already; and no value made by that kernel's other
// nodes is a graph output or read by a kernel that stays.
// Site: kernels = {the output's kernel, then every kernel absorbed: those upstream of the output
// whose results nothing that stays needs}; params["output"] = the output's position in outputs().
std::vector<Site> constant_output_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> constant_output(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
