// cuDNN handle per device, bound to the caller's stream on every call.
#include <cudnn.h>

#include <mutex>

#include "kforge_runtime.cuh"

extern "C" void* kf_cudnn_handle(KfContext* ctx) {
  static std::mutex mu;
  static cudnnHandle_t handles[64] = {};
  std::lock_guard<std::mutex> lock(mu);
  if (ctx->device < 0 || ctx->device >= 64) return nullptr;
  cudnnHandle_t& h = handles[ctx->device];
  if (h == nullptr && cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
    h = nullptr;
    return nullptr;
  }
  if (cudnnSetStream(h, ctx->stream) != CUDNN_STATUS_SUCCESS) return nullptr;
  return h;
}
