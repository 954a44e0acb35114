// Launch shapes of a streaming elementwise kernel (relu over 19_ReLU's 1.61e9 floats), timed side by
// side on one GPU: which shape reaches the copy rate that eager's vectorized kernel reaches.
// Build: nvcc -O3 -arch=sm_90a -o /tmp/ew bench/micro/elementwise_launch.cu; run: /tmp/ew
// Prints one line per variant: median and best ms of 15 runs, and GB/s (read + write).
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ float relu(float x) { return x < 0.f ? 0.f : x; }
__device__ __forceinline__ float4 relu4(float4 v) { return make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w)); }

// kforge today: 256 threads, U float4 per thread at stride blockDim (all loads, then all stores), int64.
template <int U>
__global__ void __launch_bounds__(256) tile_u(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
  const int64_t q0 = (int64_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 p[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t q = q0 + (int64_t)u * blockDim.x;
    if (q < n4) p[u] = in[q];
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t q = q0 + (int64_t)u * blockDim.x;
    if (q < n4) out[q] = relu4(p[u]);
  }
}

// The same with streaming cache hints (evict-first loads and stores).
template <int U>
__global__ void __launch_bounds__(256) tile_u_cs(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
  const int64_t q0 = (int64_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 p[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t q = q0 + (int64_t)u * blockDim.x;
    if (q < n4) p[u] = __ldcs(in + q);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t q = q0 + (int64_t)u * blockDim.x;
    if (q < n4) __stcs(out + q, relu4(p[u]));
  }
}

// 32-bit index arithmetic inside a launch of at most 2^31 vectors (the caller splits).
template <int U>
__global__ void __launch_bounds__(256) tile_u_i32(const float4* __restrict__ in, float4* __restrict__ out, unsigned n4) {
  const unsigned q0 = blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 p[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const unsigned q = q0 + u * blockDim.x;
    if (q < n4) p[u] = in[q];
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const unsigned q = q0 + u * blockDim.x;
    if (q < n4) out[q] = relu4(p[u]);
  }
}

// Persistent grid-stride: a fixed grid, U vectors per thread per step.
template <int U>
__global__ void __launch_bounds__(256) stride_u(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x * U;
  for (int64_t q0 = (int64_t)blockIdx.x * blockDim.x * U + threadIdx.x; q0 < n4; q0 += step) {
    float4 p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = q0 + (int64_t)u * blockDim.x;
      if (q < n4) p[u] = in[q];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = q0 + (int64_t)u * blockDim.x;
      if (q < n4) out[q] = relu4(p[u]);
    }
  }
}

__global__ void fill(float* p, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (float)((i * 2654435761u) % 1000u) / 500.f - 1.f;
}

int main() {
  const int64_t n = 4096LL * 393216LL, n4 = n / 4;
  float *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, n * 4));
  CHECK(cudaMalloc(&out, n * 4));
  fill<<<4096, 256>>>(in, n);
  CHECK(cudaGetLastError());
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  auto blocks = [&](int threads, int u) { return (unsigned)((n4 + (int64_t)threads * u - 1) / ((int64_t)threads * u)); };
  const float4* i4 = reinterpret_cast<const float4*>(in);
  float4* o4 = reinterpret_cast<float4*>(out);
  struct V {
    const char* name;
    std::function<void()> run;
  };
  std::vector<V> vs = {
      {"tile 256x4 (kforge now)", [&] { tile_u<4><<<blocks(256, 4), 256>>>(i4, o4, n4); }},
      {"tile 256x1", [&] { tile_u<1><<<blocks(256, 1), 256>>>(i4, o4, n4); }},
      {"tile 256x2", [&] { tile_u<2><<<blocks(256, 2), 256>>>(i4, o4, n4); }},
      {"tile 128x1 (eager-like)", [&] { tile_u<1><<<blocks(128, 1), 128>>>(i4, o4, n4); }},
      {"tile 128x2 (triton-like)", [&] { tile_u<2><<<blocks(128, 2), 128>>>(i4, o4, n4); }},
      {"tile 128x4", [&] { tile_u<4><<<blocks(128, 4), 128>>>(i4, o4, n4); }},
      {"tile 512x1", [&] { tile_u<1><<<blocks(512, 1), 512>>>(i4, o4, n4); }},
      {"tile 256x4 streaming", [&] { tile_u_cs<4><<<blocks(256, 4), 256>>>(i4, o4, n4); }},
      {"tile 256x2 streaming", [&] { tile_u_cs<2><<<blocks(256, 2), 256>>>(i4, o4, n4); }},
      {"tile 256x4 int32", [&] { tile_u_i32<4><<<blocks(256, 4), 256>>>(i4, o4, (unsigned)n4); }},
      {"tile 128x1 int32", [&] { tile_u_i32<1><<<blocks(128, 1), 128>>>(i4, o4, (unsigned)n4); }},
      {"stride 256x4 grid=sms*8", [&] { stride_u<4><<<sms * 8, 256>>>(i4, o4, n4); }},
      {"stride 256x2 grid=sms*8", [&] { stride_u<2><<<sms * 8, 256>>>(i4, o4, n4); }},
      {"stride 256x4 grid=sms*4", [&] { stride_u<4><<<sms * 4, 256>>>(i4, o4, n4); }},
      {"memcpy d2d", [&] { CHECK(cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice)); }},
  };
  std::printf("%-28s %9s %9s %8s\n", "variant", "median_ms", "best_ms", "GB/s");
  for (int round = 0; round < 2; ++round) {  // two rounds: drift shows as a difference between them
    for (auto& v : vs) {
      std::vector<float> t;
      v.run();
      CHECK(cudaDeviceSynchronize());
      for (int r = 0; r < 15; ++r) {
        CHECK(cudaEventRecord(a));
        v.run();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
      }
      CHECK(cudaGetLastError());
      std::sort(t.begin(), t.end());
      std::printf("%-28s %9.3f %9.3f %8.0f\n", v.name, t[t.size() / 2], t[0], 2.0 * n * 4 / (t[t.size() / 2] * 1e6));
    }
  }
  return 0;
}
