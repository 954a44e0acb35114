// Does the chain cost the conv's pass back its rate, and does reading per-channel operands once per
// plane win it back? The pass back (channels-last result -> NCHW, bias and the epilogue's chain) of
// level2/1 (128 x 128 x 126 x 126, relu(v + bias) + p[c]: 16-byte stores) and level2/5 (32 x 64 x 513 x
// 513, tanh(v + bias - p[c]): positions not a multiple of 4, scalar coalesced stores), each in the
// forms kforge emitted before commit 26d6688 ("guarded": each value computed under its bounds check,
// p[c] loaded at the element's own index, (i / S) % C) and after it ("row": values first, at clamped
// positions, p read at the plane's first index; the scalar-store kernel went back to the guarded form in
// dd350e9, the profile having it slower in place), and without a chain (bias only). CUDA events, L2
// flushed before each trial, median of 15; every output checked on a sample against a host reference.
//
//   nvcc -O3 -arch=sm_90a -o /tmp/pb bench/micro/pass_back_chain.cu && /tmp/pb
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

enum Chain { kNone = 0, kReluAdd = 1, kSubTanh = 2 };

// The chain at NCHW index i (plane of S, C channels) from the value with its bias; `at` is the index the
// per-channel operand is read at (i itself, or the plane's first index).
template <int CH>
__device__ __forceinline__ float chain(float v, long long at, const float* __restrict__ p, unsigned S, unsigned C) {
  if (CH == kNone) return v;
  const float q = p[((unsigned)at / S) % C];
  if (CH == kReluAdd) return (v < 0.0f ? 0.0f : v) + q;
  return tanhf(v - q);
}

// The 16-byte tile load both forms share: 32 channels x 128 positions.
__device__ __forceinline__ void load_tile(float (*tile)[129], const float* __restrict__ ycl, long long n, long long s0,
                                          long long c0, long long C, long long S) {
  const int quad = threadIdx.x & 7, pos = threadIdx.x >> 3;
  const float* yb = ycl + (n * S + s0) * C + c0;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = pos + 32 * r;
    if (s0 + s < S && c0 + 4 * quad < C) {
      const float4 v = *reinterpret_cast<const float4*>(yb + s * C + 4 * quad);
      tile[4 * quad][s] = v.x;
      tile[4 * quad + 1][s] = v.y;
      tile[4 * quad + 2][s] = v.z;
      tile[4 * quad + 3][s] = v.w;
    }
  }
  __syncthreads();
}

// S % 4 == 0: 16-byte stores along S.
template <int CH, bool ROW>
__global__ void __launch_bounds__(256)
    back_x4(const float* __restrict__ ycl, const float* __restrict__ bias, const float* __restrict__ p,
            float* __restrict__ out, long long C, long long S) {
  __shared__ float tile[32][129];
  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32, n = blockIdx.z;
  const int row = threadIdx.x >> 3, chunk = threadIdx.x & 7;
  load_tile(tile, ycl, n, s0, c0, C, S);
  if (ROW) {
    float4 o[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int s = (int)min((long long)(32 * k + 4 * chunk), S - 4 - s0);
      const long long c = min(c0 + row, C - 1);
      float* vo = reinterpret_cast<float*>(&o[k]);
#pragma unroll
      for (int l = 0; l < 4; ++l)
        vo[l] = chain<CH>(tile[c - c0][s + l] + bias[c], (n * C + c) * S, p, (unsigned)S, (unsigned)C);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int s = 32 * k + 4 * chunk;
      if (c0 + row < C && s0 + s < S) __stcs(reinterpret_cast<float4*>(out + (n * C + c0 + row) * S + s0 + s), o[k]);
    }
  } else {
    const long long c = c0 + row;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int s = 32 * k + 4 * chunk;
      if (c < C && s0 + s < S) {
        float4 o;
        float* vo = reinterpret_cast<float*>(&o);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
          const long long i = (n * C + c) * S + s0 + s + l;
          vo[l] = chain<CH>(tile[row][s + l] + bias[c], i, p, (unsigned)S, (unsigned)C);
        }
        __stcs(reinterpret_cast<float4*>(out + (n * C + c) * S + s0 + s), o);
      }
    }
  }
}

// S % 4 != 0: each warp stores one channel's 32 consecutive positions, scalar.
template <int CH, bool ROW>
__global__ void __launch_bounds__(256)
    back_x4s(const float* __restrict__ ycl, const float* __restrict__ bias, const float* __restrict__ p,
             float* __restrict__ out, long long C, long long S) {
  __shared__ float tile[32][129];
  const long long s0 = (long long)blockIdx.x * 128, c0 = (long long)blockIdx.y * 32, n = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  load_tile(tile, ycl, n, s0, c0, C, S);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int row = warp + 8 * j;
    if (ROW) {
      float o[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int s = (int)min((long long)(lane + 32 * k), S - 1 - s0);
        const long long c = min(c0 + row, C - 1);
        o[k] = chain<CH>(tile[c - c0][s] + bias[c], (n * C + c) * S, p, (unsigned)S, (unsigned)C);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int s = lane + 32 * k;
        if (c0 + row < C && s0 + s < S) __stcs(out + (n * C + c0 + row) * S + s0 + s, o[k]);
      }
    } else {
      const long long c = c0 + row;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int s = lane + 32 * k;
        if (c < C && s0 + s < S) {
          const long long i = (n * C + c) * S + s0 + s;
          __stcs(out + i, chain<CH>(tile[row][s] + bias[c], i, p, (unsigned)S, (unsigned)C));
        }
      }
    }
  }
}

struct Variant {
  const char* name;
  int shape;  // 0: level2/1, 1: level2/5
  int chain;
  void (*launch)(const float*, const float*, const float*, float*, long long, long long, long long);
};

template <int CH, bool ROW>
void launch_x4(const float* y, const float* b, const float* p, float* o, long long N, long long C, long long S) {
  back_x4<CH, ROW>
      <<<dim3((unsigned)((S + 127) / 128), (unsigned)((C + 31) / 32), (unsigned)N), 256>>>(y, b, p, o, C, S);
}
template <int CH, bool ROW>
void launch_x4s(const float* y, const float* b, const float* p, float* o, long long N, long long C, long long S) {
  back_x4s<CH, ROW>
      <<<dim3((unsigned)((S + 127) / 128), (unsigned)((C + 31) / 32), (unsigned)N), 256>>>(y, b, p, o, C, S);
}

int main() {
  const Variant variants[] = {
      {"x4 no chain (level2/1)", 0, kNone, launch_x4<kNone, false>},
      {"x4 guarded relu+p[c] (level2/1, before)", 0, kReluAdd, launch_x4<kReluAdd, false>},
      {"x4 row relu+p[c] (level2/1, after)", 0, kReluAdd, launch_x4<kReluAdd, true>},
      {"x4s no chain (level2/5)", 1, kNone, launch_x4s<kNone, false>},
      {"x4s guarded tanh(-p[c]) (level2/5, before)", 1, kSubTanh, launch_x4s<kSubTanh, false>},
      {"x4s row tanh(-p[c]) (level2/5, after)", 1, kSubTanh, launch_x4s<kSubTanh, true>},
  };
  const long long shapes[2][3] = {{128, 128, 126 * 126}, {32, 64, 513 * 513}};
  const size_t max_elems = std::max(128LL * 128 * 126 * 126, 32LL * 64 * 513 * 513);
  float *ycl, *out, *bias, *p, *flush;
  CHECK(cudaMalloc(&ycl, max_elems * 4));
  CHECK(cudaMalloc(&out, max_elems * 4));
  CHECK(cudaMalloc(&bias, 128 * 4));
  CHECK(cudaMalloc(&p, 128 * 4));
  CHECK(cudaMalloc(&flush, 256 << 20));
  std::vector<float> host(max_elems), hb(128), hp(128);
  for (size_t i = 0; i < max_elems; ++i) host[i] = static_cast<float>(static_cast<int>(i % 2003) - 1001) / 500.0f;
  for (int c = 0; c < 128; ++c) hb[c] = 0.01f * static_cast<float>(c - 60), hp[c] = 0.02f * static_cast<float>(70 - c);
  CHECK(cudaMemcpy(ycl, host.data(), max_elems * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bias, hb.data(), 128 * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p, hp.data(), 128 * 4, cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("| variant | N x C x S | median ms | TB/s | checked |\n|---|---|---|---|---|\n");
  for (const auto& v : variants) {
    const long long N = shapes[v.shape][0], C = shapes[v.shape][1], S = shapes[v.shape][2], n = N * C * S;
    CHECK(cudaMemset(out, 0xff, n * 4));  // poison: NaN where nothing is written
    std::vector<float> ms;
    for (int t = 0; t < 16; ++t) {
      CHECK(cudaMemset(flush, t, 256 << 20));
      CHECK(cudaEventRecord(a));
      v.launch(ycl, bias, p, out, N, C, S);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float m = 0;
      CHECK(cudaEventElapsedTime(&m, a, b));
      if (t > 0) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<float> got(n);
    CHECK(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (long long i = 0; i < n && ok; i += 13) {
      const long long nn = i / (C * S), c = i / S % C, s = i % S;
      float x = host[(nn * S + s) * C + c] + hb[c];
      if (v.chain == kReluAdd) x = (x < 0.0f ? 0.0f : x) + hp[c];
      if (v.chain == kSubTanh) x = std::tanh(x - hp[c]);
      ok = std::fabs(got[i] - x) <= 1e-5f * (1.0f + std::fabs(x));
      if (!ok) std::printf("  mismatch at %lld: %g, expected %g\n", i, got[i], x);
    }
    const double med = ms[ms.size() / 2];
    std::printf("| %s | %lld x %lld x %lld | %.3f | %.2f | %s |\n", v.name, N, C, S, med,
                2.0 * n * 4 / (med * 1e-3) / 1e12, ok ? "yes" : "NO");
  }
  return 0;
}
