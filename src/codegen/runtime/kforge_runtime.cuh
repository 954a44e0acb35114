// Device runtime of generated kforge programs: context, error reporting and launch helpers.
// Included by every generated .cu; no torch headers, ever.
#pragma once

#include <cuda_runtime.h>

#include <math.h>

#include <cstdint>

struct KfContext {
  cudaStream_t stream;     // the caller's stream: all work goes here
  void* workspace;         // scratch for library calls, shared by the kernels one after another
  size_t workspace_bytes;
  int device;
};

// Records a formatted error message for kforge_last_error() and returns `code`.
extern "C" int kf_fail(int code, const char* fmt, ...);
// Library handles, created once per device and bound to ctx->stream on each call.
extern "C" void* kf_cublas_handle(KfContext* ctx);
extern "C" void* kf_cudnn_handle(KfContext* ctx);

#define KF_CUDA(call)                                                                                   \
  do {                                                                                                  \
    cudaError_t kf_e_ = (call);                                                                         \
    if (kf_e_ != cudaSuccess) return kf_fail(1, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,     \
                                             cudaGetErrorString(kf_e_));                                \
  } while (0)

// After a <<<>>> launch: reports a bad configuration at once (faults surface at the next sync).
#define KF_LAUNCHED() KF_CUDA(cudaPeekAtLastError())

// Blocks for n work items with grid-stride loops: enough to fill the GPU, never past the grid limit.
static inline unsigned int kf_grid(int64_t n, int block) {
  int64_t b = (n + block - 1) / block;
  if (b < 1) b = 1;
  const int64_t cap = 132LL * 32;  // 32 blocks per SM of an H200 is plenty for grid-stride loops
  return static_cast<unsigned int>(b < cap ? b : cap);
}

#define KF_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
