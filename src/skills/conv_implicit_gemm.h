// conv_implicit_gemm: a float32 2-d convolution whose reduction C_in * kh * kw is small runs as kforge's own
// implicit GEMM on TF32 tensor cores (codegen knob implicit_gemm = 1, emit_conv_implicit_gemm.cpp): the NCHW
// input read once, the NCHW result written once with the bias and the conv_epilogue chain applied on the
// way out. Such a convolution is bound by the write of its result; cuDNN's channels-last engine adds the
// transposes and a second write and read of the result, its NCHW engine a transpose inside.
//
// Legal when: a cuDNN convolution kernel (not transposed) of 2 spatial dims, groups 1, float32, C_out a
// multiple of 8 up to kImplicitGemmMaxChannels, C_in * kh * kw up to kImplicitGemmMaxReduction, the knobs
// engine, direct and channels_last at their defaults (the skill runs before conv_channels_last), nothing
// but the elementwise chain after the convolution in the kernel, and a tolerance that allows TF32's
// rounding (>= 1e-3), precision not 3xtf32.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/conv_implicit_gemm_bounds.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::implicit_gemm_shape_illegal;
using kernels::implicit_gemm_smem_bytes;
using kernels::ImplicitGemmShape;
using kernels::kImplicitGemmMaxChannels;
using kernels::kImplicitGemmMaxReduction;
using kernels::kImplicitGemmMaxSmem;

// Site: one conv kernel (kernels = {k}).
std::vector<Site> conv_implicit_gemm_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_implicit_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
