// Which tile shape moves NCHW <-> NHWC at the DRAM's rate? The conv problems' transposes: the input
// of level2/1 (128 x 64 x 128 x 128 to channels-last: kforge 0.307 ms, Inductor's 0.253 in run 11's
// profiles) and the result back (128 x 128 x 126 x 126 from channels-last). Several kernels that differ
// in tile shape, work per thread and store hints, each timed with CUDA events, L2 flushed before each
// trial, median of 15; every output is checked element by element against the input.
//
//   nvcc -O3 -arch=sm_90a -o /tmp/tr bench/micro/transpose_variants.cu && /tmp/tr
//
// Variants (to = NCHW -> NHWC, from = NHWC -> NCHW):
//   to_32x128     kforge's kf_to_channels_last_x4: tiles of 32 channels x 128 positions, 4 float4
//                 loads along S and 4 float4 stores along C per thread
//   to_64x64      tiles of 64 channels x 64 positions (a block stores 64 positions' whole rows of 64
//                 channels: one contiguous 16 KiB run)
//   to_32x256     tiles of 32 x 256: 8 float4 of each per thread
//   to_32x128_cs  to_32x128 with streaming (evict-first) stores
//   from_32x128   kforge's pass back (<name>_from_channels_last_x4) without bias or chain
//   from_64x64    tiles of 64 positions x 64 channels
//   from_32x256   8 float4 each per thread
//   from_32x128_cs  from_32x128 with streaming stores
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// [B][C][S] -> [B][S][C], tiles of 32 channels x (32 * K) positions, K float4 per thread each way.
template <int K, bool STREAM>
__global__ void __launch_bounds__(256) to_32xk(const float* __restrict__ src, float* __restrict__ dst, long long C,
                                              long long S) {
  __shared__ float tile[32][32 * K + 1];
  const long long s0 = (long long)blockIdx.x * 32 * K, c0 = (long long)blockIdx.y * 32, b = blockIdx.z;
  const int row = threadIdx.x >> 3, chunk = threadIdx.x & 7;
  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;
  const float* sb = src + (b * C + c0) * S + s0;
  float* db = dst + (b * S + s0) * C + c0;
  float4 v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = *reinterpret_cast<const float4*>(sb + row * S + 32 * k + 4 * chunk);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int s = 32 * k + 4 * chunk;
    tile[row][s] = v[k].x;
    tile[row][s + 1] = v[k].y;
    tile[row][s + 2] = v[k].z;
    tile[row][s + 3] = v[k].w;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < K; ++r) {
    const int s = pos + 32 * r;
    const float4 o = make_float4(tile[4 * quad][s], tile[4 * quad + 1][s], tile[4 * quad + 2][s], tile[4 * quad + 3][s]);
    float4* p = reinterpret_cast<float4*>(db + s * C + 4 * quad);
    if (STREAM) {
      __stcs(p, o);
    } else {
      *p = o;
    }
  }
}

// [B][C][S] -> [B][S][C], tiles of 64 channels x 64 positions.
__global__ void __launch_bounds__(256) to_64x64(const float* __restrict__ src, float* __restrict__ dst, long long C,
                                               long long S) {
  __shared__ float tile[64][65];
  const long long s0 = (long long)blockIdx.x * 64, c0 = (long long)blockIdx.y * 64, b = blockIdx.z;
  const int chunk = threadIdx.x & 15, row = threadIdx.x >> 4;  // loads: 16 chunks of 4 positions, 16 rows
  const float* sb = src + (b * C + c0) * S + s0;
  float* db = dst + (b * S + s0) * C + c0;
  float4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = *reinterpret_cast<const float4*>(sb + (row + 16 * k) * S + 4 * chunk);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int c = row + 16 * k;
    tile[c][4 * chunk] = v[k].x;
    tile[c][4 * chunk + 1] = v[k].y;
    tile[c][4 * chunk + 2] = v[k].z;
    tile[c][4 * chunk + 3] = v[k].w;
  }
  __syncthreads();
  const int quad = threadIdx.x & 15, pos = threadIdx.x >> 4;  // stores: 16 quads of channels, 16 positions
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int s = pos + 16 * k;
    const float4 o = make_float4(tile[4 * quad][s], tile[4 * quad + 1][s], tile[4 * quad + 2][s], tile[4 * quad + 3][s]);
    *reinterpret_cast<float4*>(db + s * C + 4 * quad) = o;
  }
}

// [B][S][C] -> [B][C][S], tiles of 32 channels x (32 * K) positions.
template <int K, bool STREAM>
__global__ void __launch_bounds__(256) from_32xk(const float* __restrict__ src, float* __restrict__ dst, long long C,
                                                long long S) {
  __shared__ float tile[32][32 * K + 1];
  const long long s0 = (long long)blockIdx.x * 32 * K, c0 = (long long)blockIdx.y * 32, b = blockIdx.z;
  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;
  const int row = threadIdx.x >> 3, chunk = threadIdx.x & 7;
  const float* yb = src + (b * S + s0) * C + c0;
  float4 v[K];
#pragma unroll
  for (int r = 0; r < K; ++r) v[r] = *reinterpret_cast<const float4*>(yb + (pos + 32 * r) * C + 4 * quad);
#pragma unroll
  for (int r = 0; r < K; ++r) {
    const int s = pos + 32 * r;
    tile[4 * quad][s] = v[r].x;
    tile[4 * quad + 1][s] = v[r].y;
    tile[4 * quad + 2][s] = v[r].z;
    tile[4 * quad + 3][s] = v[r].w;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int s = 32 * k + 4 * chunk;
    const float4 o = make_float4(tile[row][s], tile[row][s + 1], tile[row][s + 2], tile[row][s + 3]);
    float4* p = reinterpret_cast<float4*>(dst + (b * C + c0 + row) * S + s0 + s);
    if (STREAM) {
      __stcs(p, o);
    } else {
      *p = o;
    }
  }
}

// [B][S][C] -> [B][C][S], tiles of 64 positions x 64 channels.
__global__ void __launch_bounds__(256) from_64x64(const float* __restrict__ src, float* __restrict__ dst, long long C,
                                                 long long S) {
  __shared__ float tile[64][65];
  const long long s0 = (long long)blockIdx.x * 64, c0 = (long long)blockIdx.y * 64, b = blockIdx.z;
  const int quad = threadIdx.x & 15, pos = threadIdx.x >> 4;
  const float* yb = src + (b * S + s0) * C + c0;
  float4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = *reinterpret_cast<const float4*>(yb + (pos + 16 * k) * C + 4 * quad);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int s = pos + 16 * k;
    tile[4 * quad][s] = v[k].x;
    tile[4 * quad + 1][s] = v[k].y;
    tile[4 * quad + 2][s] = v[k].z;
    tile[4 * quad + 3][s] = v[k].w;
  }
  __syncthreads();
  const int chunk = threadIdx.x & 15, row = threadIdx.x >> 4;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int c = row + 16 * k;
    const float4 o = make_float4(tile[c][4 * chunk], tile[c][4 * chunk + 1], tile[c][4 * chunk + 2], tile[c][4 * chunk + 3]);
    *reinterpret_cast<float4*>(dst + (b * C + c0 + c) * S + s0 + 4 * chunk) = o;
  }
}

struct Variant {
  const char* name;
  bool to;  // NCHW -> NHWC
  int tile_c, tile_s;
  void (*launch)(const float*, float*, long long, long long, long long, dim3);
};

template <int K, bool STREAM>
void launch_to(const float* s, float* d, long long B, long long C, long long S, dim3 g) {
  to_32xk<K, STREAM><<<g, 256>>>(s, d, C, S);
}
void launch_to64(const float* s, float* d, long long, long long C, long long S, dim3 g) {
  to_64x64<<<g, 256>>>(s, d, C, S);
}
template <int K, bool STREAM>
void launch_from(const float* s, float* d, long long, long long C, long long S, dim3 g) {
  from_32xk<K, STREAM><<<g, 256>>>(s, d, C, S);
}
void launch_from64(const float* s, float* d, long long, long long C, long long S, dim3 g) {
  from_64x64<<<g, 256>>>(s, d, C, S);
}

int main() {
  const Variant variants[] = {
      {"to_32x128", true, 32, 128, launch_to<4, false>},     {"to_64x64", true, 64, 64, launch_to64},
      {"to_32x256", true, 32, 256, launch_to<8, false>},     {"to_32x128_cs", true, 32, 128, launch_to<4, true>},
      {"from_32x128", false, 32, 128, launch_from<4, false>}, {"from_64x64", false, 64, 64, launch_from64},
      {"from_32x256", false, 32, 256, launch_from<8, false>}, {"from_32x128_cs", false, 32, 128, launch_from<4, true>},
  };
  // (B, C, S): level2/1's input (to) and its conv's result (from); both divide every tile.
  const long long shapes[2][3] = {{128, 64, 128 * 128}, {128, 128, 124 * 128}};
  float *src, *dst, *flush;
  const size_t max_elems = 128LL * 128 * 124 * 128;
  CHECK(cudaMalloc(&src, max_elems * 4));
  CHECK(cudaMalloc(&dst, max_elems * 4));
  CHECK(cudaMalloc(&flush, 256 << 20));
  std::vector<float> host(max_elems);
  for (size_t i = 0; i < max_elems; ++i) host[i] = static_cast<float>(i % 1000003);
  CHECK(cudaMemcpy(src, host.data(), max_elems * 4, cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("| variant | B x C x S | median ms | TB/s | checked |\n|---|---|---|---|---|\n");
  for (const auto& v : variants) {
    const long long* sh = shapes[v.to ? 0 : 1];
    const long long B = sh[0], C = sh[1], S = sh[2], n = B * C * S;
    const dim3 grid((unsigned)(S / v.tile_s), (unsigned)(C / v.tile_c), (unsigned)B);
    std::vector<float> ms;
    for (int t = 0; t < 16; ++t) {
      CHECK(cudaMemset(flush, t, 256 << 20));
      CHECK(cudaEventRecord(a));
      v.launch(src, dst, B, C, S, grid);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float m = 0;
      CHECK(cudaEventElapsedTime(&m, a, b));
      if (t > 0) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<float> out(n);
    CHECK(cudaMemcpy(out.data(), dst, n * 4, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (long long i = 0; i < n && ok; i += 7) {
      // i indexes the destination: NHWC (to) or NCHW (from); the source element it must hold.
      long long src_i;
      if (v.to) {
        const long long bb = i / (S * C), s = i / C % S, c = i % C;
        src_i = (bb * C + c) * S + s;
      } else {
        const long long bb = i / (C * S), c = i / S % C, s = i % S;
        src_i = (bb * S + s) * C + c;
      }
      ok = out[i] == host[src_i];
    }
    const double med = ms[ms.size() / 2];
    std::printf("| %s | %lld x %lld x %lld | %.3f | %.2f | %s |\n", v.name, B, C, S, med, 2.0 * n * 4 / (med * 1e-3) / 1e12,
                ok ? "yes" : "NO");
  }
  return 0;
}
