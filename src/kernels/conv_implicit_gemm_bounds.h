// The bounds of kforge's implicit-GEMM convolution (codegen/emit_conv_implicit_gemm.cpp, knob implicit_gemm):
// the sizes its tile takes and the shared memory it needs. The skill that sets the knob (skills/conv_implicit_gemm)
// and the emitter that builds it both ask implicit_gemm_shape_illegal, so they never disagree.
#pragma once

#include <cstdint>
#include <string>

namespace kforge::kernels {

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

}  // namespace kforge::kernels
