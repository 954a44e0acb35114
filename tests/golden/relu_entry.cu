// kforge entry point for t_relu: 1 kernels (1 distinct), ABI 1.
#include "kforge_runtime.cuh"

extern "C" int k0_relu(KfContext* ctx, void* const* bufs);

static int kf_run_kernels(KfContext* ctx, void* const* bufs) {
  int rc = 0;
  {  // k0_relu
    void* const operands[] = {bufs[0], bufs[1]};
    if ((rc = k0_relu(ctx, operands)) != 0) return rc;
  }
  return rc;
}

static const size_t kScratchBytes = 0ULL;
static const size_t kWorkspaceOffset = 0ULL;

extern "C" int kforge_abi_version(void) { return 1; }
extern "C" size_t kforge_scratch_bytes(void) { return kScratchBytes; }

extern "C" int kforge_forward(void* const* inputs, void* const* params, void* const* outputs,
                                void* scratch, size_t scratch_bytes, void* stream) {
  (void)scratch_bytes;
  char* base = static_cast<char*>(scratch);
  void* bufs[2] = {};
  bufs[0] = inputs[0];  // x float32[4096, 393216]
  bufs[1] = outputs[0];  // y float32[4096, 393216]
  int device = 0;
  KF_CUDA(cudaGetDevice(&device));
  KfContext ctx{static_cast<cudaStream_t>(stream), base + kWorkspaceOffset, kScratchBytes - kWorkspaceOffset, device};
  return kf_run_kernels(&ctx, bufs);
}
