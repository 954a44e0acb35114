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
// Launches every kernel of a program on ctx->stream (kf_run_kernels of the generated kforge_forward).
typedef int (*KfLaunchAll)(KfContext* ctx, void* const* bufs);
// Runs launch(ctx, bufs) as one CUDA graph replay where it can (kforge_runtime.cu): captured on the
// second call with the same pointers, eager otherwise. 0 on success, else kf_fail's code.
extern "C" int kf_graph_forward(KfContext* ctx, void* const* bufs, int nbufs, KfLaunchAll launch);
// A runtime-held buffer (a grown cuDNN workspace) was freed or moved: every cached graph is dropped.
extern "C" void kf_buffers_moved(void);
extern "C" const char* kforge_last_error(void);
// Library handles, created once per device and bound to ctx->stream on each call.
extern "C" void* kf_cublas_handle(KfContext* ctx);
extern "C" void* kf_cudnn_handle(KfContext* ctx);

// A convolution for kf_cudnn_conv (kforge_cudnn.cu): cuDNN's backend API with the engine PyTorch 2.x
// picks for the same problem. Plain values (cudnnDataType_t as int), one static instance per kernel:
// its address keys the plan cache.
struct KfCudnnConv {
  const char* name;       // the kernel's name, for messages
  int backward_data;      // 0: out = conv(in, w), cuDNN forward; 1: out = conv_transpose(in, w), backward data
  int data_type;          // cudnnDataType_t of in, w and out
  int compute_type;       // cudnnDataType_t of the accumulation (CUDNN_DATA_FLOAT for fp32, fp16, bf16)
  int exact;              // 1: only engines without the tensor-core note (torch with allow_tf32 = False)
  int deterministic;      // 1: no engines with the nondeterministic note (torch.backends.cudnn.deterministic)
  int nb_dims;            // 4 or 5: N, C and 2 or 3 spatial dims (a 1-d conv comes as 2-d with height 1)
  int64_t in_dims[5];     // the op's input [N, C_in, spatial...], packed
  int64_t w_dims[5];      // conv [C_out, C_in/groups, k...]; conv_transpose [C_in, C_out/groups, k...]
  int64_t out_dims[5];    // the op's output [N, C_out, spatial...], packed
  int64_t pad[3];         // per spatial dim, both sides
  int64_t stride[3];
  int64_t dilation[3];
  int channels_last;      // 1: in, w and out in channels-last order (NHWC, NDHWC; the filter K, spatial, C),
                          // as torch runs a conv whose tensors are channels-last (torch.compile's choice)
  int engine_search;      // > 0: the first call times up to this many of the engines torch would consider
                          // (in its order) and keeps the fastest, as torch.backends.cudnn.benchmark does;
                          // another engine than torch's default rounds differently. 0: torch's first.
};
// Runs `conv` on ctx->stream with ctx->workspace (or, for a plan that needs more, a per-device buffer
// that grows on demand, as torch allocates one). The first call per device and operand alignments
// chooses the engine (running candidates in torch's order until one succeeds, or with engine_search
// timing several and keeping the fastest); later calls run the cached plan. 0 on success, else kf_fail's code.
extern "C" int kf_cudnn_conv(KfContext* ctx, const KfCudnnConv* conv, const void* in, const void* w, void* out);

// A discrete Fourier transform for kf_cufft_exec (kforge_cufft.cu), one static instance per kernel: its address
// keys the plan cache. Data contiguous, complex values interleaved (re, im), batches one after another.
struct KfCufftTransform {
  const char* name;     // the kernel's name, for messages
  int kind;             // 0: real to complex (one-sided), 1: complex forward, 2: complex inverse, 3: complex to real
  int double_precision; // 1: float64 (D2Z, Z2Z, Z2D), 0: float32
  int rank;             // 1 to 3 transformed dims
  int n[3];             // their sizes (a real signal's for kinds 0 and 3)
  int batch;            // transforms one after another
};
// Runs `t` on ctx->stream, unnormalized as cuFFT (torch's 1/n is the importer's mul). The plan is made on the first
// call per device (cuFFT allocates its work area then: kf_graph_forward's first call is eager). Kind 3 first copies
// its input to ctx->workspace (cuFFT's complex-to-real overwrites its input). 0 on success, else kf_fail's code.
extern "C" int kf_cufft_exec(KfContext* ctx, const KfCufftTransform* t, const void* in, void* out);

// A recurrent layer for kf_cudnn_rnn (kforge_cudnn.cu): nn.LSTM / GRU / RNN on cuDNN's RNN API, set up as
// PyTorch's aten/src/ATen/native/cudnn/RNN.cpp sets it up for float32 inference. Plain values, one static
// instance per kernel: its address keys the cached descriptors and weight space.
struct KfCudnnRnn {
  const char* name;   // the kernel's name, for messages
  int cell_mode;      // cudnnRNNMode_t: CUDNN_RNN_RELU, CUDNN_RNN_TANH, CUDNN_LSTM or CUDNN_GRU
  int math_type;      // cudnnMathType_t: CUDNN_DEFAULT_MATH (torch's allow_tf32 = True) or CUDNN_FMA_MATH
  int input_size;
  int hidden_size;
  int num_layers;
  int bidirectional;  // 0 or 1
  int batch_first;    // 1: x and y are (B, T, .), else (T, B, .)
  int has_biases;     // 0: the weight space's biases stay zero, as torch leaves them
  int seq;            // T
  int batch;          // B
  int num_weights;    // torch's _flat_weights: per layer and direction w_ih, w_hh (then b_ih, b_hh)
};
// Runs `rnn` on ctx->stream: out (T, B, D * H) or (B, T, D * H), hy and cy (L * D, B, H) (cy only for an
// lstm); h0 and c0 may be null (zeros). The weights are copied into cuDNN's weight space by one kernel on
// every call (so in-place changes to them are seen); the descriptors, the weight space and its layout are
// made on the first call per device and kept. 0 on success, else kf_fail's code.
extern "C" int kf_cudnn_rnn(KfContext* ctx, const KfCudnnRnn* rnn, const void* x, const void* h0, const void* c0,
                            const void* const* weights, void* out, void* hy, void* cy);

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

// Division with rounding and remainders (floor_divide, trunc_divide, remainder, fmod) in the compute
// types of the elementwise kernels, as torch's CUDA kernels compute them: floats through fmod (a zero
// divisor gives a / b's inf or nan), integers with C's truncating division corrected; an integer
// division by zero traps (torch raises ZeroDivisionError).
template <typename T>
__device__ __forceinline__ T kf_nonzero_divisor(T b) {
  if (b == T(0)) __trap();
  return b;
}
template <typename T>
__device__ __forceinline__ T kf_floor_divide(T a, T b) {
  b = kf_nonzero_divisor(b);
  const T q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T>
__device__ __forceinline__ T kf_trunc_divide(T a, T b) {
  return a / kf_nonzero_divisor(b);
}
template <typename T>
__device__ __forceinline__ T kf_remainder(T a, T b) {
  b = kf_nonzero_divisor(b);
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T>
__device__ __forceinline__ T kf_fmod(T a, T b) {
  return a % kf_nonzero_divisor(b);
}
#define KF_FLOAT_DIVISION(T, FMOD, FLOOR, TRUNC, COPYSIGN)                    \
  __device__ __forceinline__ T kf_floor_divide(T a, T b) {                    \
    if (b == T(0)) return a / b;                                              \
    const T mod = FMOD(a, b);                                                 \
    T div = (a - mod) / b;                                                    \
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);             \
    if (div == T(0)) return COPYSIGN(T(0), a / b);                            \
    T floordiv = FLOOR(div);                                                  \
    if (div - floordiv > T(0.5)) floordiv += T(1);                            \
    return floordiv;                                                          \
  }                                                                           \
  __device__ __forceinline__ T kf_trunc_divide(T a, T b) { return TRUNC(a / b); } \
  __device__ __forceinline__ T kf_remainder(T a, T b) {                       \
    T mod = FMOD(a, b);                                                       \
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;                \
    return mod;                                                               \
  }                                                                           \
  __device__ __forceinline__ T kf_fmod(T a, T b) { return FMOD(a, b); }
KF_FLOAT_DIVISION(float, fmodf, floorf, truncf, copysignf)
KF_FLOAT_DIVISION(double, fmod, floor, trunc, copysign)
#undef KF_FLOAT_DIVISION
