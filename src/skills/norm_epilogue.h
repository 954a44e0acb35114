// norm_epilogue: the elementwise chain after a normalization (batch norm with batch statistics,
// instance, group and layer norm) joins the norm's kernel: its pass that writes
// (x - mean) * rstd * weight + bias computes the chain on each value before the one store, where
// before the chain was its own pass (a full read and write of the norm's result and a launch).
// torch.compile's Inductor fuses the same way (level2/17's InstanceNorm then divide, level2/85's
// GroupNorm then scale).
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_norm_epilogue;
using kernels::is_norm_kernel;
using kernels::is_norm_node;

// Legal when: the producer is a generated norm kernel of the normalization alone, float32 in and out;
// the consumer is a generated pointwise chain whose result has the norm's shape and dtype; the norm's
// result is read by the consumer alone and is not a graph output. Site: kernels = {norm, chain}.
std::vector<Site> norm_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> norm_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
