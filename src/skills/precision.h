// Precision skills: spend the protocol's tolerance on tensor cores, never more than it allows.
//   tf32_contractions     cuBLAS GEMMs (linear, matmul, bmm, attention) in TF32 (fp32 accumulate)
//   cudnn_fastest_engine  convolutions on cuDNN's fastest engine (cudnnFind, TF32 allowed) instead
//                         of the engine PyTorch's reference would pick
// Both need a tolerance of at least 1e-3 (the cuda-agent protocol's 1e-2): TF32 rounds operands to
// 10 mantissa bits, about 5e-4 relative per product, which 1e-4 (kernelbench) does not absorb and
// 1e-2 does. Verification still decides: a schedule these produce is checked like any other.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

constexpr double kTf32MinTolerance = 1e-3;

// Site: every cuBLAS kernel (one site for the whole schedule: precision is a global choice).
std::vector<Site> tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> tf32_contractions(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

// Sites: one per cuDNN convolution kernel still on PyTorch's engine.
std::vector<Site> cudnn_fastest_engine_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> cudnn_fastest_engine(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
