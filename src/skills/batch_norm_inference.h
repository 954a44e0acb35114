// batch_norm_inference: a batch_norm with running statistics (training false, the cuda-agent
// protocol's eval mode) is a per-channel affine map, y = (x - mean[c]) / sqrt(var[c] + eps) *
// weight[c] + bias[c]; this skill makes its kernel a pointwise chain (strategy "elementwise"), so
// that fuse_elementwise and conv_epilogue can join it to the ops around it. Computed as torch's
// inference transform computes it (float math, 1 / sqrt), so only rounding order may differ.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// Legal when: the kernel is a generated norm kernel of one batch_norm node with training false,
// running mean and variance given, and an input of rank >= 2 (channels on dim 1).
// Site: kernels = {that kernel}.
std::vector<Site> batch_norm_inference_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> batch_norm_inference(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
