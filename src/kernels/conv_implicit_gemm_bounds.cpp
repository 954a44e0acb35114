// Why a convolution's sizes rule out the implicit-GEMM kernel.
#include "kernels/conv_implicit_gemm_bounds.h"

#include <cstdint>

namespace kforge::kernels {

std::string implicit_gemm_shape_illegal(const ImplicitGemmShape& s) {
  const int64_t reduction = s.cin * s.kh * s.kw;
  if (reduction > kImplicitGemmMaxReduction)
    return "the reduction C_in * kh * kw = " + std::to_string(reduction) + " exceeds " +
           std::to_string(kImplicitGemmMaxReduction) + " (cuDNN's engines win where the convolution is compute-bound)";
  if (s.cout % 8 != 0 || s.cout > kImplicitGemmMaxChannels)
    return "C_out = " + std::to_string(s.cout) + " is not a multiple of 8 up to " +
           std::to_string(kImplicitGemmMaxChannels);
  if (s.in_plane > INT32_MAX || s.out_plane > INT32_MAX)
    return "an input or output plane of 2^31 elements or more (the kernel's coordinates are 32-bit)";
  const int64_t smem = implicit_gemm_smem_bytes(s.cin, s.cout, s.kh, s.kw, s.stride_w, s.dilation_w);
  if (smem > kImplicitGemmMaxSmem)
    return "its tile would take " + std::to_string(smem) + " bytes of shared memory (at most " +
           std::to_string(kImplicitGemmMaxSmem) + ")";
  return "";
}

}  // namespace kforge::kernels
