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

#include "skills/skill.h"

namespace kforge::skills {

// The largest reduction (C_in * kh * kw) the skill takes: past it the convolution turns compute-bound and
// cuDNN's engines (wgmma, deeper pipelines) win.
inline constexpr int64_t kImplicitGemmMaxReduction = 160;
// The most output channels (one block holds a tile's results for all of them in registers).
inline constexpr int64_t kImplicitGemmMaxChannels = 64;

// The kernel's shared memory (bytes) for a conv of `cin` input and `cout` output channels, a kh x kw window,
// stride and dilation sw, dw along the width: the TF32 weights [k padded to 8][cout padded to 8 mod 32], the
// input window of a 128-position tile ([cin * kh][columns, padded to 16 mod 32] and a row of zeros) or the
// tile's results ([cout][132]), whichever is larger (they share), the reduction's offsets and the bias.
inline int64_t implicit_gemm_smem_bytes(int64_t cin, int64_t cout, int64_t kh, int64_t kw, int64_t sw, int64_t dw) {
  constexpr int64_t kPositions = 128;
  const int64_t columns = (kPositions - 1) * sw + (kw - 1) * dw + 1;
  const int64_t ld_in = columns + ((16 - columns % 32) + 32) % 32;
  const int64_t ld_w = cout + ((8 - cout % 32) + 32) % 32;
  const int64_t k_padded = (cin * kh * kw + 7) / 8 * 8;
  const int64_t window = cin * kh * ld_in + (kPositions - 1) * sw + 1;
  const int64_t results = cout * (kPositions + 4);
  return 4 * (k_padded * ld_w + (window > results ? window : results) + k_padded + cout);
}
// The most shared memory a block may take on the H200 (227 KiB).
inline constexpr int64_t kImplicitGemmMaxSmem = 227 << 10;

// Why a 2-d, ungrouped float32 convolution of these sizes cannot run as the implicit GEMM ("" when it can):
// the reduction, the output channels, the planes' sizes (the kernel's plane and window arithmetic is 32-bit)
// and the shared memory. The skill's legality and the emitter's check (codegen) both ask this.
struct ImplicitGemmShape {
  int64_t cin = 0, cout = 0, kh = 0, kw = 0;
  int64_t stride_w = 1, dilation_w = 1;
  int64_t in_plane = 0, out_plane = 0;  // H x W of the input, P x Q of the output
};
std::string implicit_gemm_shape_illegal(const ImplicitGemmShape& s);

// Site: one conv kernel (kernels = {k}).
std::vector<Site> conv_implicit_gemm_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_implicit_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
