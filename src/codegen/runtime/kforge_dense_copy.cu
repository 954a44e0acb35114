// Dense copies of strided inputs, for generated programs (one copy per program library). A caller's input that
// is a view (a slice, a transpose, an expand) is copied by this kernel into a dense tensor the caller allocated,
// before kforge_forward: the generated kernels read dense row-major tensors. One thread per element of the dense
// result walks its index back into the view's strides (in elements). The kernelbench export leaves this unit
// out of a program without a kernel of its own (it would stand in for one under upstream's checker).
#include <cstdint>

#include "kforge_runtime.cuh"

namespace {

constexpr int kKfMaxViewDims = 16;

struct KfStridedView {
  int ndim;
  int64_t sizes[kKfMaxViewDims];
  int64_t strides[kKfMaxViewDims];
};

template <typename T>
__global__ void kf_dense_copy_kernel(T* __restrict__ dst, const T* __restrict__ src, KfStridedView view, int64_t n) {
  KF_GRID_STRIDE(i, n) {
    int64_t rest = i, offset = 0;
    for (int d = view.ndim - 1; d >= 0; --d) {
      offset += (rest % view.sizes[d]) * view.strides[d];
      rest /= view.sizes[d];
    }
    dst[i] = src[offset];
  }
}

template <typename T>
int kf_dense_copy_as(void* dst, const void* src, const KfStridedView& view, int64_t n, cudaStream_t stream) {
  constexpr int kBlock = 256;
  kf_dense_copy_kernel<T>
      <<<kf_grid(n, kBlock), kBlock, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), view, n);
  KF_LAUNCHED();
  return 0;
}

}  // namespace

// Copies the view (sizes, strides in elements, ndim of them; element_size bytes each) at src into the dense
// row-major tensor at dst, on stream. 0 on success, else kf_fail's code (kforge_last_error says why).
extern "C" int kforge_dense_copy(void* dst, const void* src, int ndim, const int64_t* sizes, const int64_t* strides,
                                 int element_size, void* stream) {
  if (ndim < 0 || ndim > kKfMaxViewDims)
    return kf_fail(2, "kforge_dense_copy: a view of %d dims (at most %d)", ndim, kKfMaxViewDims);
  KfStridedView view{};
  view.ndim = ndim;
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] < 0 || strides[d] < 0)
      return kf_fail(2, "kforge_dense_copy: dim %d has size %lld and stride %lld (negative)", d,
                     static_cast<long long>(sizes[d]), static_cast<long long>(strides[d]));
    view.sizes[d] = sizes[d];
    view.strides[d] = strides[d];
    n *= sizes[d];
  }
  if (n == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (element_size) {
    case 1: return kf_dense_copy_as<uint8_t>(dst, src, view, n, s);
    case 2: return kf_dense_copy_as<uint16_t>(dst, src, view, n, s);
    case 4: return kf_dense_copy_as<uint32_t>(dst, src, view, n, s);
    case 8: return kf_dense_copy_as<uint64_t>(dst, src, view, n, s);
    default: return kf_fail(2, "kforge_dense_copy: elements of %d bytes (1, 2, 4 or 8)", element_size);
  }
}
