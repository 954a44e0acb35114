// kforge kernel k0_add: y = add(x, b)
#include "kforge_runtime.cuh"

namespace {
__global__ void __launch_bounds__(256) k0_add_kernel(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out) {
  KF_GRID_STRIDE(i, 14745600LL) {
    float r2;
    { typedef float T; const T a = T(in0[i]); const T b = T(in1[(((i / 900LL) % 128LL) * 1LL)]); r2 = (float)((a + b)); }
    out[i] = r2;
  }
}
}  // namespace

extern "C" int k0_add(KfContext* ctx, void* const* bufs) {
  k0_add_kernel<<<kf_grid(14745600LL, 256), 256, 0, ctx->stream>>>(((const float*)bufs[0]), ((const float*)bufs[1]), ((float*)bufs[2]));
  KF_LAUNCHED();
  return 0;
}
