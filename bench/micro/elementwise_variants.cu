// Which loop shape reads and writes at the DRAM's rate? relu over 1.6e9 floats (level1/19's size),
// several kernels that differ only in how threads walk the data, each timed with CUDA events,
// L2 flushed before each trial, median of 15. The output is checked against the input.
//
//   nvcc -O3 -arch=sm_90a -o /tmp/ew bench/micro/elementwise_variants.cu && /tmp/ew
//
// Variants:
//   stride_x1     grid-stride, one float4 per thread and iteration, grid capped at 132*32 blocks
//                 (kforge's kernel until commit 46816ee)
//   stride_x4     the same, 4 float4 per thread loaded before any is stored (commit 46816ee)
//   tile_x4_256   no grid stride: each 256-thread block one contiguous tile of 4 float4 per thread
//                 (thread t: t, t+256, t+512, t+768), as torch's vectorized elementwise kernel walks
//   tile_x4_128   the same with 128-thread blocks
//   tile_x8_128   8 float4 per thread, 128-thread blocks
//   stride_x4_cs  stride_x4 with streaming (evict-first) loads and stores
//   tile_x1_256, tile_x1_128, tile_x2_256, tile_x2_128: tiles of one or two float4 per thread (torch's
//                 vectorized kernel: 128 threads, one float4 each; Triton's relu: 128 threads, two)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

__device__ __forceinline__ float4 relu4(float4 v) {
  return make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
}

__global__ void __launch_bounds__(256) stride_x1(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < n4; q += (long long)gridDim.x * blockDim.x)
    out[q] = relu4(in[q]);
}

template <bool kStreaming>
__global__ void __launch_bounds__(256) stride_x4(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long q0 = blockIdx.x * (long long)blockDim.x + threadIdx.x; q0 < n4; q0 += 4 * step) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long long q = q0 + u * step;
      if (q < n4) v[u] = kStreaming ? __ldcs(in + q) : in[q];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long long q = q0 + u * step;
      if (q < n4) {
        if (kStreaming) {
          __stcs(out + q, relu4(v[u]));
        } else {
          out[q] = relu4(v[u]);
        }
      }
    }
  }
}

template <int kBlock, int kPer>
__global__ void __launch_bounds__(kBlock) tile(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  const long long base = (long long)blockIdx.x * kBlock * kPer + threadIdx.x;
  float4 v[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const long long q = base + u * kBlock;
    if (q < n4) v[u] = in[q];
  }
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const long long q = base + u * kBlock;
    if (q < n4) out[q] = relu4(v[u]);
  }
}

unsigned capped(long long blocks) {
  return (unsigned)std::min<long long>(blocks, 132LL * 32);
}

int main() {
  const long long n = 4096LL * 393216;  // level1/19_ReLU
  const long long n4 = n / 4;
  float *in, *out, *flush;
  CHECK(cudaMalloc(&in, n * 4));
  CHECK(cudaMalloc(&out, n * 4));
  CHECK(cudaMalloc(&flush, 256 << 20));
  // Inputs in [-1, 1): half of them clamp.
  std::vector<float> host(1 << 24);
  for (size_t i = 0; i < host.size(); ++i) host[i] = (float)((i * 2654435761u) % 2000) / 1000.f - 1.f;
  for (long long off = 0; off < n; off += (long long)host.size())
    CHECK(cudaMemcpy(in + off, host.data(), std::min<long long>(host.size(), n - off) * 4, cudaMemcpyHostToDevice));
  struct Variant {
    const char* name;
    void (*run)(const float4*, float4*, long long);
  };
  const Variant variants[] = {
      {"stride_x1", [](const float4* i, float4* o, long long m) { stride_x1<<<capped((m + 255) / 256), 256>>>(i, o, m); }},
      {"stride_x4",
       [](const float4* i, float4* o, long long m) { stride_x4<false><<<capped((m + 1023) / 1024), 256>>>(i, o, m); }},
      {"tile_x4_256",
       [](const float4* i, float4* o, long long m) { tile<256, 4><<<(unsigned)((m + 1023) / 1024), 256>>>(i, o, m); }},
      {"tile_x4_128",
       [](const float4* i, float4* o, long long m) { tile<128, 4><<<(unsigned)((m + 511) / 512), 128>>>(i, o, m); }},
      {"tile_x8_128",
       [](const float4* i, float4* o, long long m) { tile<128, 8><<<(unsigned)((m + 1023) / 1024), 128>>>(i, o, m); }},
      {"tile_x1_256",
       [](const float4* i, float4* o, long long m) { tile<256, 1><<<(unsigned)((m + 255) / 256), 256>>>(i, o, m); }},
      {"tile_x1_128",
       [](const float4* i, float4* o, long long m) { tile<128, 1><<<(unsigned)((m + 127) / 128), 128>>>(i, o, m); }},
      {"tile_x2_256",
       [](const float4* i, float4* o, long long m) { tile<256, 2><<<(unsigned)((m + 511) / 512), 256>>>(i, o, m); }},
      {"tile_x2_128",
       [](const float4* i, float4* o, long long m) { tile<128, 2><<<(unsigned)((m + 255) / 256), 128>>>(i, o, m); }},
      {"stride_x4_cs",
       [](const float4* i, float4* o, long long m) { stride_x4<true><<<capped((m + 1023) / 1024), 256>>>(i, o, m); }},
  };
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const double bytes = 2.0 * n * 4;
  std::printf("| variant | median ms | TB/s | checked |\n|---|---|---|---|\n");
  for (const Variant& v : variants) {
    CHECK(cudaMemset(out, 0xff, n * 4));  // poison: NaN everywhere
    std::vector<float> ms;
    for (int t = 0; t < 17; ++t) {
      CHECK(cudaMemset(flush, t, 256 << 20));
      CHECK(cudaEventRecord(a));
      v.run(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), n4);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float x = 0;
      CHECK(cudaEventElapsedTime(&x, a, b));
      if (t >= 2) ms.push_back(x);
    }
    std::sort(ms.begin(), ms.end());
    // Check the first and the last 16M elements against relu of the input.
    bool ok = true;
    std::vector<float> got(host.size());
    for (long long off : {0LL, n - (long long)host.size()}) {
      CHECK(cudaMemcpy(got.data(), out + off, got.size() * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < got.size() && ok; ++i) {
        const float x = host[(off + (long long)i) % (long long)host.size()];
        ok = got[i] == std::max(x, 0.f);
      }
    }
    const double med = ms[ms.size() / 2];
    std::printf("| %s | %.3f | %.2f | %s |\n", v.name, med, bytes / (med * 1e-3) / 1e12, ok ? "ok" : "WRONG");
  }
  return 0;
}
