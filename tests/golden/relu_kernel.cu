// kforge kernel k0_relu: y = relu(x)
#include "kforge_runtime.cuh"

namespace {
__global__ void __launch_bounds__(256) k0_relu_kernel(const float* __restrict__ in0, float* __restrict__ out) {
  KF_GRID_STRIDE(i, 1610612736LL) {
    float r1;
    { typedef float T; const T x = T(in0[i]); r1 = (float)((x < T(0) ? T(0) : x)); }
    out[i] = r1;
  }
}
}  // namespace

extern "C" int k0_relu(KfContext* ctx, void* const* bufs) {
  k0_relu_kernel<<<kf_grid(1610612736LL, 256), 256, 0, ctx->stream>>>(((const float*)bufs[0]), ((float*)bufs[1]));
  KF_LAUNCHED();
  return 0;
}
