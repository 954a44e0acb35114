// Precision skills: spend the protocol's tolerance on tensor cores, never more than it allows.
//   tf32_contractions     cuBLAS GEMMs (linear, matmul, bmm, attention) in TF32 (fp32 accumulate)
//   split_tf32_contractions  cuBLAS GEMMs (linear, matmul, einsum) in 3xTF32: fp32-accurate on TF32 tensor
//                         cores (kernels/split_tf32.h), for the tolerances TF32 does not fit (kernelbench's 1e-4)
// tf32_contractions needs a tolerance of at least 1e-3 (the cuda-agent protocol's 1e-2): TF32 rounds operands to
// 10 mantissa bits, about 5e-4 relative per product, which 1e-4 (kernelbench) does not absorb and
// 1e-2 does. Verification still decides: a schedule it produces is checked like any other.
// (A second skill, cudnn_fastest_engine, put convolutions on cudnnFind's pick: measured 1.4-7x
// slower than PyTorch's engine on the H200, bench/NOTES.md run 5, so it was removed; the emitter's
// knob engine = 1 remains for experiments.)
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

constexpr double kTf32MinTolerance = 1e-3;

// Why the cuDNN convolution kernel k may not run another engine than torch's ("" when it may): it must
// be a cuDNN conv kernel (plain or transposed) whose first node is the convolution, with the knobs
// engine, direct and implicit_gemm at their defaults, under a tolerance of at least kTf32MinTolerance (another TF32
// engine rounds differently) and not precision 3xtf32. The conv skills add their own conditions.
std::string another_conv_engine_illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k);

// Site: every cuBLAS kernel (one site for the whole schedule: precision is a global choice).
std::vector<Site> tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> tf32_contractions(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

// Site: the float32 cuBLAS GEMM kernels (not attention: its batched GEMMs stay exact fp32), one site for the
// schedule, under precision fp32, where the split pays for their sizes (kernels::split_tf32_pays over their
// FLOPs and operand bytes), the error estimate (tf32_error.h) fits the tolerance, and no kernel runs on
// cuDNN (precision 3xtf32 puts convolutions and recurrent layers on exact FMA engines, slower than the
// TF32 ones torch's reference runs).
std::vector<Site> split_tf32_contractions_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> split_tf32_contractions(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
