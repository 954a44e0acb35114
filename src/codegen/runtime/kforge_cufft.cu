// cuFFT plans of the Fft family's kernels (KfCufftTransform): one per transform and device, made on the first
// call, bound to the caller's stream on every call.
#include <cufft.h>

#include <mutex>
#include <vector>

#include "kforge_runtime.cuh"

namespace {

struct KfCufftPlan {
  const KfCufftTransform* t;
  int device;
  cufftHandle plan;
};

cufftType kf_cufft_type(const KfCufftTransform* t) {
  switch (t->kind) {
    case 0: return t->double_precision ? CUFFT_D2Z : CUFFT_R2C;
    case 3: return t->double_precision ? CUFFT_Z2D : CUFFT_C2R;
    default: return t->double_precision ? CUFFT_Z2Z : CUFFT_C2C;
  }
}

// Complex values per transform on the complex side (the one-sided count for kinds 0 and 3).
long long kf_complex_points(const KfCufftTransform* t) {
  long long points = 1;
  for (int d = 0; d < t->rank; ++d)
    points *= (t->kind == 0 || t->kind == 3) && d == t->rank - 1 ? t->n[d] / 2 + 1 : t->n[d];
  return points;
}

}  // namespace

extern "C" int kf_cufft_exec(KfContext* ctx, const KfCufftTransform* t, const void* in, void* out) {
  static std::mutex mu;
  static auto* plans = new std::vector<KfCufftPlan>();  // never destroyed: plans may outlive static destruction order
  cufftHandle plan = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    bool found = false;
    for (const KfCufftPlan& p : *plans) {
      if (p.t == t && p.device == ctx->device) {
        plan = p.plan;
        found = true;
      }
    }
    if (!found) {
      int n[3] = {t->n[0], t->n[1], t->n[2]};
      const cufftResult r = cufftPlanMany(&plan, t->rank, n, nullptr, 1, 0, nullptr, 1, 0, kf_cufft_type(t), t->batch);
      if (r != CUFFT_SUCCESS) return kf_fail(1, "%s: cufftPlanMany failed (cufftResult %d)", t->name, (int)r);
      plans->push_back({t, ctx->device, plan});
    }
  }
  cufftResult r = cufftSetStream(plan, ctx->stream);
  if (r != CUFFT_SUCCESS) return kf_fail(1, "%s: cufftSetStream failed (cufftResult %d)", t->name, (int)r);
  void* src = const_cast<void*>(in);  // out of place: cuFFT leaves the input of kinds 0 to 2 as it was
  if (t->kind == 3) {
    const size_t bytes = (size_t)kf_complex_points(t) * (size_t)t->batch * (t->double_precision ? 16u : 8u);
    if (ctx->workspace_bytes < bytes)
      return kf_fail(2, "%s: workspace of %zu bytes is smaller than the %zu the input copy needs", t->name,
                     ctx->workspace_bytes, bytes);
    KF_CUDA(cudaMemcpyAsync(ctx->workspace, in, bytes, cudaMemcpyDeviceToDevice, ctx->stream));
    src = ctx->workspace;
  }
  if (t->double_precision) {
    switch (t->kind) {
      case 0: r = cufftExecD2Z(plan, (cufftDoubleReal*)src, (cufftDoubleComplex*)out); break;
      case 3: r = cufftExecZ2D(plan, (cufftDoubleComplex*)src, (cufftDoubleReal*)out); break;
      default:
        r = cufftExecZ2Z(plan, (cufftDoubleComplex*)src, (cufftDoubleComplex*)out,
                         t->kind == 2 ? CUFFT_INVERSE : CUFFT_FORWARD);
    }
  } else {
    switch (t->kind) {
      case 0: r = cufftExecR2C(plan, (cufftReal*)src, (cufftComplex*)out); break;
      case 3: r = cufftExecC2R(plan, (cufftComplex*)src, (cufftReal*)out); break;
      default:
        r = cufftExecC2C(plan, (cufftComplex*)src, (cufftComplex*)out, t->kind == 2 ? CUFFT_INVERSE : CUFFT_FORWARD);
    }
  }
  if (r != CUFFT_SUCCESS) return kf_fail(1, "%s: the cuFFT transform failed (cufftResult %d)", t->name, (int)r);
  return 0;
}
