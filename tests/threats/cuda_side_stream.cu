// threat: creates its own CUDA stream
// layer: static
// expect: forbidden
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) {
  cudaStream_t mine;
  cudaStreamCreate(&mine);
  return 0;
}
