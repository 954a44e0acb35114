// threat: pins data in L2 across the flush (persisting access policy)
// layer: static
// expect: forbidden
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) {
  cudaStreamAttrValue attr = {};
  attr.accessPolicyWindow.base_ptr = bufs[0];
  cudaStreamSetAttribute(ctx->stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  return 0;
}
