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
// The same chain, 4 elements per 16-byte load and store, 1 vectors per thread in flight, one tile per block.
__global__ void __launch_bounds__(256) k0_relu_kernel_x4(const float* __restrict__ in0, float* __restrict__ out) {
  const int64_t step = blockDim.x;
  {
    const int64_t q0 = (int64_t)blockIdx.x * blockDim.x * 1 + threadIdx.x;
    float4 p0[1];
#pragma unroll
    for (int u = 0; u < 1; ++u) {
      const int64_t q = q0 + u * step;
      if (q < 402653184LL) {
        p0[u] = reinterpret_cast<const float4*>(in0)[q];
      }
    }
#pragma unroll
    for (int u = 0; u < 1; ++u) {
    const int64_t q = q0 + u * step;
    if (q >= 402653184LL) break;
    const float* v0 = reinterpret_cast<const float*>(&p0[u]);
    float4 res;
    float* vres = reinterpret_cast<float*>(&res);
#pragma unroll
    for (int l = 0; l < 4; ++l) {
    const int64_t i = q * 4 + l;
    (void)i;
    float r1;
    { typedef float T; const T x = T(v0[l]); r1 = (float)((x < T(0) ? T(0) : x)); }
    vres[l] = r1;
    }
    reinterpret_cast<float4*>(out)[q] = res;
    }
  }
}
}  // namespace

extern "C" int k0_relu(KfContext* ctx, void* const* bufs) {
  if ((reinterpret_cast<uintptr_t>(((float*)bufs[1])) | reinterpret_cast<uintptr_t>(((const float*)bufs[0]))) % 16 == 0) {
    k0_relu_kernel_x4<<<1572864u, 256, 0, ctx->stream>>>(((const float*)bufs[0]), ((float*)bufs[1]));
  } else {
    k0_relu_kernel<<<kf_grid(1610612736LL, 256), 256, 0, ctx->stream>>>(((const float*)bufs[0]), ((float*)bufs[1]));
  }
  KF_LAUNCHED();
  return 0;
}
