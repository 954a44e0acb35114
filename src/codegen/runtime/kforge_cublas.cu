// cuBLAS handle per device, bound to the caller's stream on every call.
#include <cublas_v2.h>

#include <mutex>

#include "kforge_runtime.cuh"

extern "C" void* kf_cublas_handle(KfContext* ctx) {
  static std::mutex mu;
  static cublasHandle_t handles[64] = {};
  std::lock_guard<std::mutex> lock(mu);
  if (ctx->device < 0 || ctx->device >= 64) return nullptr;
  cublasHandle_t& h = handles[ctx->device];
  if (h == nullptr && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    h = nullptr;
    return nullptr;
  }
  if (cublasSetStream(h, ctx->stream) != CUBLAS_STATUS_SUCCESS) return nullptr;
  return h;
}
