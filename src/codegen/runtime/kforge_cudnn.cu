// cuDNN for generated programs: a handle per device, bound to the caller's stream on every call, and
// convolutions on cuDNN's backend API that run the engine PyTorch 2.x runs for the same problem; recurrent layers
// (kf_cudnn_rnn, at the end) on its RNN API, set up as torch sets them up.
//
// Why the same engine: the reference convolution is torch's, in TF32 by default
// (torch.backends.cudnn.allow_tf32), and two TF32 engines round differently, by up to a few 1e-3 on
// KernelBench problems; the upstream tolerance is 1e-4. Our kernels run in the process that runs
// torch and load the same libcudnn, so the same graph and the same heuristics query give the same
// engine. kf_cudnn_conv mirrors torch's run_single_conv (aten/src/ATen/native/cudnn/Conv_v8.cpp,
// heuristics mode, torch.backends.cudnn.benchmark = False):
//  - one operation: CONVOLUTION_FORWARD for conv, CONVOLUTION_BACKWARD_DATA for conv_transpose
//    (dx = the transposed conv's output, dy = its input, w unchanged); tensors x, y, w with unique
//    ids 'x', 'y', 'w', packed strides (channels-last ones when the conv asks), the data type of the tensors and the byte alignment of their
//    addresses (the largest power of two up to 32 that divides them); the convolution descriptor
//    with compute type, cross-correlation, pre- and post-padding, strides and dilations, and no math
//    type nor group count (cuDNN derives the groups from the channel counts); alpha 1, beta 0 (float,
//    double for a double compute type); the graph built with the handle.
//  - engine configurations from heuristics mode INSTANT (mode B when TORCH_CUDNN_USE_HEURISTIC_MODE_B
//    is 1, as torch reads it), in cuDNN's order, then those of mode FALLBACK. A configuration is left
//    out when its engine has the numerical note DOWN_CONVERT_INPUTS, NONDETERMINISTIC when asked to be
//    deterministic, TENSOR_CORE when asked to be exact (torch with allow_tf32 = False), or when it
//    is on torch's errata list (below). The first configuration whose plan finalizes, whose
//    workspace can be allocated and whose execution returns success computes the result and is
//    cached per kernel, device and alignments, as torch caches it. Torch allocates each plan's
//    workspace from its caching allocator, however large (4.3 GB for some KernelBench transposed
//    convolutions), and moves to the next configuration only when that allocation fails; so a plan
//    whose workspace is larger than the program's scratch (ctx->workspace) gets a per-device buffer
//    that only grows, and the configuration is skipped only when cudaMalloc fails.
//  - torch adds a bias with a separate elementwise kernel afterwards; so do the emitted kernels.
// With engine_search > 0 (the conv_engine_search skill, looser tolerances only) the first call times
// that many of the configurations above, in the same order with the same filters, and keeps the
// fastest, as torch does with torch.backends.cudnn.benchmark = True.
// Cached plans are never destroyed (torch leaks its cache too: cuDNN can be unloaded before static
// destructors run). KFORGE_CUDNN_LOG=1 prints each choice to stderr, in the form of the frontend's
// plan tags ("ConvFwd_eng0_k2=1_k3=0"), so it can be compared with torch's CUDNN_FRONTEND_LOG_INFO.
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

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

namespace kf_cudnn_backend {

using Desc = cudnnBackendDescriptor_t;

// torch's unique ids: the characters 'x', 'y' and 'w'.
constexpr int64_t kUidX = 'x';
constexpr int64_t kUidY = 'y';
constexpr int64_t kUidW = 'w';

// Engines torch refuses (the errata check of Conv_v8.cpp). The cuDNN version range is the one
// torch was built with (CUDNN_VERSION of its headers), taken here as ours; rules for sm_120 only
// and a user's CUDNN_ERRATA_JSON_FILE are not mirrored.
struct Erratum {
  bool backward_data;
  int64_t engine;
  int64_t version_start;  // inclusive
  int64_t version_end;    // exclusive
  bool three_d_only;      // applied when x has more than 4 dims
};
constexpr Erratum kErrata[] = {
    {false, 5, 92301, 92400, false},    // torch issue 188288
    {false, 23, 90800, 91500, true},    // torch issue 163539
    {true, 23, 8000, INT64_MAX, true},  // ConvBwdData engine 23, 3-d
};

bool on_errata_list(const KfCudnnConv* conv, int64_t engine) {
  for (const Erratum& e : kErrata) {
    if (e.backward_data != (conv->backward_data != 0) || e.engine != engine) continue;
    if (CUDNN_VERSION < e.version_start || CUDNN_VERSION >= e.version_end) continue;
    if (e.three_d_only && conv->nb_dims <= 4) continue;
    return true;
  }
  return false;
}

// Byte alignment of an address as torch computes it (getAlignment): at most 32.
int64_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 1;
  while (align < 32 && a % static_cast<uintptr_t>(2 * align) == 0) align *= 2;
  return align;
}

bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KFORGE_CUDNN_LOG");
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// "<call> failed: <cuDNN's message>", with cuDNN's last detailed message when it has one.
std::string describe_failure(const char* call, cudnnStatus_t s) {
  char detail[512];
  detail[0] = '\0';
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string m = std::string(call) + " failed: " + cudnnGetErrorString(s);
  if (detail[0] != '\0') m += std::string(" (cuDNN's last message: ") + detail + ")";
  return m;
}

// A failure of the op (a KfCudnnConv or a KfCudnnRnn), named by its kernel.
template <class Op>
int fail(const Op* op, const std::string& what) {
  return kf_fail(1, "%s: %s", op->name, what.c_str());
}

// Returns kf_fail's code from the enclosing function when a cuDNN call for `op` fails.
#define KF_BACKEND_CALL_FOR(op, call)                                                              \
  do {                                                                                             \
    const cudnnStatus_t kf_be_status_ = (call);                                                    \
    if (kf_be_status_ != CUDNN_STATUS_SUCCESS) {                                                   \
      return kf_cudnn_backend::fail(op, kf_cudnn_backend::describe_failure(#call, kf_be_status_)); \
    }                                                                                              \
  } while (0)
#define KF_BACKEND_CALL(call) KF_BACKEND_CALL_FOR(conv, call)

// Records the failure in `why` and yields false when a cuDNN call fails (a candidate is dropped).
#define KF_BACKEND_SOFT(call)                        \
  do {                                               \
    const cudnnStatus_t kf_be_status_ = (call);      \
    if (kf_be_status_ != CUDNN_STATUS_SUCCESS) {     \
      *why = describe_failure(#call, kf_be_status_); \
      return false;                                  \
    }                                                \
  } while (0)

// Descriptors made together and destroyed together, unless released to the cache.
class Descs {
 public:
  Descs() = default;
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;
  ~Descs() {
    for (Desc d : all_) (void)cudnnBackendDestroyDescriptor(d);
  }
  cudnnStatus_t create(cudnnBackendDescriptorType_t type, Desc* out) {
    *out = nullptr;
    const cudnnStatus_t s = cudnnBackendCreateDescriptor(type, out);
    if (s == CUDNN_STATUS_SUCCESS) all_.push_back(*out);
    return s;
  }
  void release_all() { all_.clear(); }
  void release(Desc d) {
    for (size_t i = 0; i < all_.size(); ++i) {
      if (all_[i] == d) {
        all_.erase(all_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

 private:
  std::vector<Desc> all_;
};

// A non-virtual tensor with packed strides (torch's fixSizeOneDimStride gives size-1 dims the packed
// stride too); with conv->channels_last, packed in the order N, spatial..., C (dim 1 innermost), as
// torch describes a channels-last tensor (its filter too: K, spatial..., C).
int make_tensor(const KfCudnnConv* conv, Descs& ds, int64_t uid, const int64_t* dims, int64_t align, Desc* t) {
  const int nb = conv->nb_dims;
  int64_t strides[5];
  if (conv->channels_last != 0) {
    strides[1] = 1;
    int64_t step = dims[1];
    for (int i = nb - 1; i >= 2; --i) {
      strides[i] = step;
      step *= dims[i];
    }
    strides[0] = step;
  } else {
    strides[nb - 1] = 1;
    for (int i = nb - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  }
  const cudnnDataType_t type = static_cast<cudnnDataType_t>(conv->data_type);
  KF_BACKEND_CALL(ds.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nb, dims));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nb, strides));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  KF_BACKEND_CALL(cudnnBackendFinalize(*t));
  return 0;
}

// The one-operation graph: x, y and w as cuDNN names them, finalized with the handle.
int make_graph(const KfCudnnConv* conv, cudnnHandle_t handle, Descs& ds, const int64_t align[3], Desc* graph) {
  const bool bwd = conv->backward_data != 0;
  // cuDNN's x is the forward conv's input; for backward data it is dx, the transposed conv's output.
  const int64_t* x_dims = bwd ? conv->out_dims : conv->in_dims;
  const int64_t* y_dims = bwd ? conv->in_dims : conv->out_dims;
  Desc x = nullptr, y = nullptr, w = nullptr;
  int rc = make_tensor(conv, ds, kUidX, x_dims, align[0], &x);
  if (rc == 0) rc = make_tensor(conv, ds, kUidY, y_dims, align[1], &y);
  if (rc == 0) rc = make_tensor(conv, ds, kUidW, conv->w_dims, align[2], &w);
  if (rc != 0) return rc;

  const int64_t spatial = conv->nb_dims - 2;
  const cudnnDataType_t compute = static_cast<cudnnDataType_t>(conv->compute_type);
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  Desc cd = nullptr;
  KF_BACKEND_CALL(ds.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cd));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, conv->pad));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, conv->pad));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, conv->dilation));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, conv->stride));
  KF_BACKEND_CALL(cudnnBackendFinalize(cd));

  const bool dbl = compute == CUDNN_DATA_DOUBLE;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const cudnnBackendAttributeType_t scalar = dbl ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  Desc op = nullptr;
  if (bwd) {
    KF_BACKEND_CALL(ds.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &op));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, scalar, 1, alpha));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, scalar, 1, beta));
  } else {
    KF_BACKEND_CALL(ds.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
    KF_BACKEND_CALL(
        cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    KF_BACKEND_CALL(
        cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
    KF_BACKEND_CALL(
        cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, scalar, 1, alpha));
    KF_BACKEND_CALL(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, scalar, 1, beta));
  }
  KF_BACKEND_CALL(cudnnBackendFinalize(op));

  KF_BACKEND_CALL(ds.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph));
  KF_BACKEND_CALL(
      cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
  KF_BACKEND_CALL(cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  KF_BACKEND_CALL(cudnnBackendFinalize(*graph));
  return 0;
}

// The engine configurations of one heuristics mode, in cuDNN's order (owned by `ds`).
bool heuristic_configs(Desc graph, cudnnBackendHeurMode_t mode, Descs& ds, std::vector<Desc>* configs,
                       std::string* why) {
  Desc heur = nullptr;
  KF_BACKEND_SOFT(ds.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  KF_BACKEND_SOFT(
      cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  KF_BACKEND_SOFT(cudnnBackendFinalize(heur));
  int64_t count = 0;
  KF_BACKEND_SOFT(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<Desc> all(static_cast<size_t>(count > 0 ? count : 0), nullptr);
  for (Desc& c : all) KF_BACKEND_SOFT(ds.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c));
  int64_t returned = 0;
  if (count > 0) {
    KF_BACKEND_SOFT(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                             &returned, all.data()));
  }
  all.resize(static_cast<size_t>(returned < count ? returned : count));
  *configs = all;
  return true;
}

// What torch needs to know of a configuration's engine: its global index and numerical notes.
struct EngineInfo {
  int64_t index = -1;
  bool tensor_core = false;
  bool down_convert = false;
  bool nondeterministic = false;
};

bool engine_info(Desc config, Descs& ds, EngineInfo* info, std::string* why) {
  Desc engine = nullptr;
  KF_BACKEND_SOFT(ds.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
  int64_t n = 0;
  KF_BACKEND_SOFT(
      cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine));
  KF_BACKEND_SOFT(
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &info->index));
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  KF_BACKEND_SOFT(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                           CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes));
  for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) info->tensor_core = true;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) info->down_convert = true;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) info->nondeterministic = true;
  }
  return true;
}

// The frontend's plan tag: "ConvFwd_eng<index>" and "_k<knob type>=<choice>" per knob (for logs).
std::string plan_tag(const KfCudnnConv* conv, Desc config, int64_t engine) {
  std::string tag = std::string(conv->backward_data ? "ConvBwdData" : "ConvFwd") + "_eng" + std::to_string(engine);
  Descs ds;
  std::vector<Desc> knobs(CUDNN_KNOB_TYPE_COUNTS, nullptr);
  for (Desc& k : knobs) {
    if (ds.create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &k) != CUDNN_STATUS_SUCCESS) return tag + "_k?";
  }
  int64_t count = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               CUDNN_KNOB_TYPE_COUNTS, &count, knobs.data()) != CUDNN_STATUS_SUCCESS) {
    return tag + "_k?";
  }
  for (int64_t i = 0; i < count && i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    int64_t choice = -2, n = 0;
    const Desc k = knobs[static_cast<size_t>(i)];
    if (cudnnBackendGetAttribute(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &choice) !=
            CUDNN_STATUS_SUCCESS) {
      return tag + "_k?";
    }
    tag += "_k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(choice);
  }
  return tag;
}

// A finalized execution plan for one configuration, and its workspace size.
bool make_plan(cudnnHandle_t handle, Desc config, Descs& ds, Desc* plan, int64_t* workspace, std::string* why) {
  KF_BACKEND_SOFT(ds.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, plan));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config));
  KF_BACKEND_SOFT(cudnnBackendFinalize(*plan));
  int64_t n = 0;
  KF_BACKEND_SOFT(
      cudnnBackendGetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, workspace));
  return true;
}

// One execution: the variant pack binds 'x', 'y', 'w' to the buffers (torch's order) and the workspace.
bool execute(cudnnHandle_t handle, Desc plan, void* ws, const KfCudnnConv* conv, const void* in, const void* w,
             void* out, std::string* why) {
  const bool bwd = conv->backward_data != 0;
  void* ptrs[3] = {bwd ? out : const_cast<void*>(in), bwd ? const_cast<void*>(in) : out, const_cast<void*>(w)};
  const int64_t uids[3] = {kUidX, kUidY, kUidW};
  Descs ds;
  Desc pack = nullptr;
  KF_BACKEND_SOFT(ds.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
  KF_BACKEND_SOFT(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  KF_BACKEND_SOFT(cudnnBackendFinalize(pack));
  KF_BACKEND_SOFT(cudnnBackendExecute(handle, plan, pack));
  return true;
}

// One caller at a time: cuDNN does not promise that an execution plan is safe across threads, and
// the handle is bound to the caller's stream until its work is queued.
std::mutex& conv_mutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

// Per device: the scratch buffer grown for plans that need more than ctx->workspace, and its size.
std::map<int, std::pair<void*, int64_t>>& scratch_buffers() {
  static auto* buffers = new std::map<int, std::pair<void*, int64_t>>();
  return *buffers;
}

// Scratch beyond ctx->workspace for plans that need more: one buffer per device, grown on demand and
// kept, as torch's caching allocator keeps a workspace block (kforge_release_scratch frees it).
// Callers hold conv_mutex().
void* large_workspace(int device, int64_t bytes, std::string* why) {
  auto& [ptr, size] = scratch_buffers()[device];
  if (bytes <= size) return ptr;
  if (ptr != nullptr) {
    // Work queued earlier may still read the old buffer: let it finish before freeing.
    if (cudaDeviceSynchronize() != cudaSuccess || cudaFree(ptr) != cudaSuccess) {
      *why = std::string("freeing the old cuDNN workspace failed: ") + cudaGetErrorString(cudaGetLastError());
      return nullptr;
    }
    ptr = nullptr;
    size = 0;
    kf_buffers_moved();  // graphs captured with the old buffer must not replay
  }
  if (cudaMalloc(&ptr, static_cast<size_t>(bytes)) != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky: the next configuration may fit
    ptr = nullptr;
    *why = "its workspace of " + std::to_string(bytes) + " bytes could not be allocated";
    return nullptr;
  }
  size = bytes;
  return ptr;
}

// The workspace a plan runs with: the program's scratch when it is large enough, else the device's
// large buffer (nullptr and a reason when that cannot be had).
void* workspace_for(KfContext* ctx, int64_t bytes, std::string* why) {
  if (bytes <= 0) return nullptr;
  if (static_cast<uint64_t>(bytes) <= ctx->workspace_bytes) return ctx->workspace;
  return large_workspace(ctx->device, bytes, why);
}

struct Key {
  const KfCudnnConv* conv;
  int device;
  int64_t align_x, align_y, align_w;
  bool operator<(const Key& o) const {
    return std::tie(conv, device, align_x, align_y, align_w) <
           std::tie(o.conv, o.device, o.align_x, o.align_y, o.align_w);
  }
};

struct Chosen {
  Desc plan = nullptr;
  int64_t workspace = 0;
};

// The fastest of three runs of `plan` on the handle's stream, in ms (cudaEvents; the caller's work
// queued before is not in it). False, with why, when a run or an event call fails.
bool time_plan(cudnnHandle_t handle, cudaStream_t stream, Desc plan, void* ws, const KfCudnnConv* conv, const void* in,
               const void* w, void* out, float* ms, std::string* why) {
  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    *why = std::string("cudaEventCreate failed: ") + cudaGetErrorString(cudaGetLastError());
    if (start != nullptr) (void)cudaEventDestroy(start);
    return false;
  }
  bool ok = true;
  why->clear();
  *ms = 1e30f;
  for (int r = 0; r < 3 && ok; ++r) {
    float t = 0;
    ok = cudaEventRecord(start, stream) == cudaSuccess && execute(handle, plan, ws, conv, in, w, out, why) &&
         cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
         cudaEventElapsedTime(&t, start, stop) == cudaSuccess;
    if (ok) *ms = std::min(*ms, t);
  }
  if (!ok && why->empty()) *why = std::string("timing failed: ") + cudaGetErrorString(cudaGetLastError());
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return ok;
}

// During an engine search, engines whose workspace exceeds both the program's scratch and this are
// not timed (torch's first engine always is): a search must not take gigabytes a faster plan would
// not need.
constexpr int64_t kSearchWorkspaceCap = int64_t{2} << 30;

// A plan that ran, kept until the search decides (its descriptors die with it unless chosen).
struct Candidate {
  std::unique_ptr<Descs> ds;
  Desc plan = nullptr, config = nullptr;
  int mode = 0;
  int64_t workspace = 0;
  float ms = 0;
  std::string tag;
};

// Finds torch's engine for this convolution and runs it once (that run is the call's result). With
// conv->engine_search > 0 (and the stream not being captured into a CUDA graph, where nothing can be
// timed), the first engine_search engines that run are timed instead, in torch's order, and the
// fastest runs once more for the result.
int choose_and_run(cudnnHandle_t handle, KfContext* ctx, const KfCudnnConv* conv, const int64_t align[3],
                   const void* in, const void* w, void* out, Chosen* chosen) {
  Descs graph_ds;
  Desc graph = nullptr;
  const int rc = make_graph(conv, handle, graph_ds, align, &graph);
  if (rc != 0) return rc;

  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool search = conv->engine_search > 0 && cudaStreamIsCapturing(ctx->stream, &capture) == cudaSuccess &&
                      capture == cudaStreamCaptureStatusNone;
  const char* mode_b = std::getenv("TORCH_CUDNN_USE_HEURISTIC_MODE_B");
  const bool use_b = mode_b != nullptr && std::strcmp(mode_b, "1") == 0;
  const cudnnBackendHeurMode_t modes[2] = {use_b ? CUDNN_HEUR_MODE_B : CUDNN_HEUR_MODE_INSTANT,
                                           CUDNN_HEUR_MODE_FALLBACK};
  const char* mode_names[2] = {use_b ? "B" : "instant", "fallback"};
  std::string last = "no engine configurations";
  int tried = 0;
  Descs cfg_ds[2];
  std::vector<Candidate> timed;  // declared after cfg_ds: its plans go before their configurations
  for (int m = 0; m < 2; ++m) {
    std::vector<Desc> configs;
    std::string why;
    if (!heuristic_configs(graph, modes[m], cfg_ds[m], &configs, &why)) {
      last = std::string("heuristics ") + mode_names[m] + ": " + why;
      if (log_enabled()) std::fprintf(stderr, "kforge cudnn: %s: %s\n", conv->name, last.c_str());
      continue;
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      if (search && static_cast<int>(timed.size()) >= conv->engine_search) break;
      auto plan_ds = std::make_unique<Descs>();
      EngineInfo info;
      if (!engine_info(configs[i], *plan_ds, &info, &why)) {
        last = why;
        continue;
      }
      if (info.down_convert || (conv->deterministic && info.nondeterministic) || (conv->exact && info.tensor_core)) {
        continue;
      }
      if (on_errata_list(conv, info.index)) continue;
      ++tried;
      Desc plan = nullptr;
      int64_t workspace = 0;
      bool ok = make_plan(handle, configs[i], *plan_ds, &plan, &workspace, &why);
      if (ok && search && !timed.empty() && workspace > kSearchWorkspaceCap &&
          static_cast<uint64_t>(workspace) > ctx->workspace_bytes) {
        if (log_enabled()) {
          std::fprintf(stderr, "kforge cudnn: %s: not timed: engine %lld needs %lld bytes of workspace\n", conv->name,
                       static_cast<long long>(info.index), static_cast<long long>(workspace));
        }
        continue;
      }
      void* ws = nullptr;
      if (ok && workspace > 0 && (ws = workspace_for(ctx, workspace, &why)) == nullptr) ok = false;
      if (ok && !execute(handle, plan, ws, conv, in, w, out, &why)) {
        (void)cudaGetLastError();  // a failed launch inside cuDNN must not surface at the next kernel
        ok = false;
      }
      float ms = 0;
      if (ok && search && !time_plan(handle, ctx->stream, plan, ws, conv, in, w, out, &ms, &why)) {
        (void)cudaGetLastError();
        ok = false;
      }
      if (!ok) {
        last = "engine " + std::to_string(info.index) + ": " + why;
        if (log_enabled()) std::fprintf(stderr, "kforge cudnn: %s: skipped %s\n", conv->name, last.c_str());
        continue;
      }
      const std::string tag = plan_tag(conv, configs[i], info.index);
      if (search) {
        if (log_enabled()) {
          std::fprintf(stderr, "kforge cudnn: %s: timed %s: %.4f ms, workspace %lld bytes\n", conv->name, tag.c_str(),
                       ms, static_cast<long long>(workspace));
        }
        timed.push_back({std::move(plan_ds), plan, configs[i], m, workspace, ms, tag});
        continue;
      }
      if (log_enabled()) {
        std::fprintf(stderr, "kforge cudnn: %s: %s, workspace %lld bytes, heuristics %s, configuration %zu\n",
                     conv->name, tag.c_str(), static_cast<long long>(workspace), mode_names[m], i);
      }
      plan_ds->release_all();
      cfg_ds[m].release(configs[i]);
      graph_ds.release_all();
      chosen->plan = plan;
      chosen->workspace = workspace;
      return 0;
    }
  }
  if (timed.empty()) {
    return fail(conv, "no cuDNN engine ran this convolution (" + std::to_string(tried) + " tried; last: " + last + ")");
  }
  Candidate& best = *std::min_element(timed.begin(), timed.end(),
                                      [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
  // The result comes from the engine kept (the last run was another's).
  std::string why;
  void* ws = workspace_for(ctx, best.workspace, &why);
  if (best.workspace > 0 && ws == nullptr) return fail(conv, "the chosen engine's " + why);
  if (!execute(handle, best.plan, ws, conv, in, w, out, &why)) return fail(conv, why);
  if (log_enabled()) {
    std::fprintf(stderr, "kforge cudnn: %s: %s, the fastest of %zu timed (%.4f ms; torch's first: %.4f ms)\n",
                 conv->name, best.tag.c_str(), timed.size(), best.ms, timed.front().ms);
  }
  best.ds->release_all();
  cfg_ds[best.mode].release(best.config);
  graph_ds.release_all();
  chosen->plan = best.plan;
  chosen->workspace = best.workspace;
  return 0;
}

#undef KF_BACKEND_SOFT
#undef KF_BACKEND_CALL

}  // namespace kf_cudnn_backend

extern "C" int kf_cudnn_conv(KfContext* ctx, const KfCudnnConv* conv, const void* in, const void* w, void* out) {
  using namespace kf_cudnn_backend;
  if (conv->nb_dims < 4 || conv->nb_dims > 5) {
    return kf_fail(1, "%s: cuDNN convolutions take 4-d or 5-d tensors, not %d-d", conv->name, conv->nb_dims);
  }
  // x is written by backward data (dx), read by forward; alignments in x, y, w order as torch keys them.
  const bool bwd = conv->backward_data != 0;
  const int64_t align[3] = {alignment_of(bwd ? out : in), alignment_of(bwd ? in : out), alignment_of(w)};
  static std::map<Key, Chosen>* cache = new std::map<Key, Chosen>();  // never freed, like torch's
  std::lock_guard<std::mutex> lock(conv_mutex());
  cudnnHandle_t handle = static_cast<cudnnHandle_t>(kf_cudnn_handle(ctx));
  if (handle == nullptr) return kf_fail(1, "%s: no cuDNN handle for device %d", conv->name, ctx->device);
  const Key key{conv, ctx->device, align[0], align[1], align[2]};
  auto it = cache->find(key);
  if (it == cache->end()) {
    Chosen chosen;
    const int rc = choose_and_run(handle, ctx, conv, align, in, w, out, &chosen);
    if (rc == 0) cache->emplace(key, chosen);
    return rc;
  }
  const Chosen& c = it->second;
  std::string why;
  void* ws = workspace_for(ctx, c.workspace, &why);
  if (c.workspace > 0 && ws == nullptr) return kf_fail(2, "%s: the cuDNN plan's %s", conv->name, why.c_str());
  if (!execute(handle, c.plan, ws, conv, in, w, out, &why)) {
    return kf_fail(1, "%s: %s", conv->name, why.c_str());
  }
  return 0;
}

// Frees the scratch grown for large plans, after the work queued on each device finished. kforge's
// harness calls it (through the generated model_new.py's kforge_release) after each candidate, so a
// worker does not keep gigabytes the next candidate needs; the next large plan grows it again.
extern "C" void kforge_release_scratch(void) {
  using namespace kf_cudnn_backend;
  std::lock_guard<std::mutex> lock(conv_mutex());
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = -1;
  for (auto& [device, buffer] : scratch_buffers()) {
    if (buffer.first == nullptr) continue;
    if (cudaSetDevice(device) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess) (void)cudaFree(buffer.first);
    (void)cudaGetLastError();
    buffer = {nullptr, 0};
    kf_buffers_moved();
  }
  if (current >= 0) (void)cudaSetDevice(current);
}

// ---- recurrent layers: kf_cudnn_rnn ----
//
// The setup of torch's _cudnn_rnn (aten/src/ATen/native/cudnn/RNN.cpp, cuDNN's v8 RNN API) for float32
// inference: cudnnSetRNNDescriptor_v8 with CUDNN_RNN_ALGO_STANDARD (torch's choice for fp32), the cell mode,
// CUDNN_RNN_DOUBLE_BIAS (torch's bias mode whatever has_biases says; without biases it leaves them zero),
// CUDNN_LINEAR_INPUT, the data and compute type float, CUDNN_DEFAULT_MATH when TF32 is allowed (torch's
// default, torch.backends.cudnn.allow_tf32 = True) or CUDNN_FMA_MATH, projSize = hiddenSize, a dropout
// descriptor with dropout 0 (torch's set_no_dropout) and CUDNN_RNN_PADDED_IO_ENABLED (unpacked input);
// unpacked RNN data descriptors with every sequence of the full length (SEQ_MAJOR, or BATCH_MAJOR for
// batch_first, where torch transposes to sequence-major instead); then cudnnRNNForward in
// CUDNN_FWD_MODE_INFERENCE with devSeqLengths null, as in torch. Null h0 / c0 are zeros to cuDNN; the cell
// state's descriptor is given for every mode, as torch gives it (cuDNN reads it for an lstm only).
//
// The weights: torch's flat weights are views into one buffer laid out as cuDNN's weight space, and torch
// copies them there when they are not. Here the layout is read once per device (cudnnGetRNNWeightParams:
// the address of every gate's matrix and bias), merged into runs that are contiguous in both torch's
// tensors and the space, and every call copies the weights into the space with one kernel launch per
// 64 runs (the runs go by value, so a captured CUDA graph keeps its own pointers). The descriptors, the
// space (zeroed once: the biases of a layer without biases stay zero) and the runs are made on the first
// call per device, eagerly; a later call, captured into a CUDA graph or not, only launches the copy and
// cudnnRNNForward. The workspace is the program's scratch when large enough, else the per-device
// buffer the convolutions grow (workspace_for). Calls of one program on two streams at once would share
// the space: the programs kforge generates run one stream at a time.

namespace kf_cudnn_rnn_impl {

constexpr int kRunsPerLaunch = 64;

// Runs of floats to copy: from a weight tensor (at an element offset) to an offset of the space.
struct CopyRuns {
  const float* src[kRunsPerLaunch];
  int64_t dst[kRunsPerLaunch];
  int64_t count[kRunsPerLaunch];
};

__global__ void pack_weights(CopyRuns runs, int n, float* space) {
  const int r = blockIdx.y;
  if (r >= n) return;
  const float* src = runs.src[r];
  float* dst = space + runs.dst[r];
  const int64_t count = runs.count[r];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    dst[i] = src[i];
  }
}

// Where a run starts in torch's tensors: weight `weight`, element `offset`.
struct Run {
  int weight;
  int64_t offset;
  int64_t space_offset;  // in floats
  int64_t count;
};

struct Plan {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr;
  cudnnRNNDataDescriptor_t y = nullptr;
  cudnnTensorDescriptor_t h = nullptr;
  size_t weight_bytes = 0;
  size_t workspace_bytes = 0;
  float* space = nullptr;  // cuDNN's weight space, per device
  std::vector<Run> runs;
};

using kf_cudnn_backend::fail;

int gates_of(const KfCudnnRnn* rnn) {
  return rnn->cell_mode == CUDNN_LSTM ? 4 : rnn->cell_mode == CUDNN_GRU ? 3 : 1;
}

// The descriptors torch makes for this layer.
int make_descriptors(cudnnHandle_t handle, const KfCudnnRnn* rnn, Plan* p) {
  const int directions = rnn->bidirectional ? 2 : 1;
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateDropoutDescriptor(&p->dropout));
  KF_BACKEND_CALL_FOR(rnn, cudnnSetDropoutDescriptor(p->dropout, handle, 0.0f, nullptr, 0, 0));
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateRNNDescriptor(&p->rnn));
  KF_BACKEND_CALL_FOR(rnn, cudnnSetRNNDescriptor_v8(
      p->rnn, CUDNN_RNN_ALGO_STANDARD, static_cast<cudnnRNNMode_t>(rnn->cell_mode), CUDNN_RNN_DOUBLE_BIAS,
      rnn->bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
      CUDNN_DATA_FLOAT, static_cast<cudnnMathType_t>(rnn->math_type), rnn->input_size, rnn->hidden_size,
      rnn->hidden_size, rnn->num_layers, p->dropout, CUDNN_RNN_PADDED_IO_ENABLED));
  const cudnnRNNDataLayout_t layout =
      rnn->batch_first ? CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED : CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  std::vector<int> lengths(static_cast<size_t>(rnn->batch), rnn->seq);
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateRNNDataDescriptor(&p->x));
  KF_BACKEND_CALL_FOR(rnn, cudnnSetRNNDataDescriptor(p->x, CUDNN_DATA_FLOAT, layout, rnn->seq, rnn->batch,
                                                     rnn->input_size, lengths.data(), nullptr));
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateRNNDataDescriptor(&p->y));
  KF_BACKEND_CALL_FOR(rnn, cudnnSetRNNDataDescriptor(p->y, CUDNN_DATA_FLOAT, layout, rnn->seq, rnn->batch,
                                                     directions * rnn->hidden_size, lengths.data(), nullptr));
  const int hdims[3] = {rnn->num_layers * directions, rnn->batch, rnn->hidden_size};
  const int hstrides[3] = {rnn->batch * rnn->hidden_size, rnn->hidden_size, 1};
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateTensorDescriptor(&p->h));
  KF_BACKEND_CALL_FOR(rnn, cudnnSetTensorNdDescriptor(p->h, CUDNN_DATA_FLOAT, 3, hdims, hstrides));
  KF_BACKEND_CALL_FOR(rnn, cudnnGetRNNWeightSpaceSize(handle, p->rnn, &p->weight_bytes));
  size_t reserve = 0;
  KF_BACKEND_CALL_FOR(rnn,
      cudnnGetRNNTempSpaceSizes(handle, p->rnn, CUDNN_FWD_MODE_INFERENCE, p->x, &p->workspace_bytes, &reserve));
  return 0;
}

// The elements a tensor descriptor of cuDNN's weight layout describes.
int64_t elements_of(cudnnTensorDescriptor_t d) {
  cudnnDataType_t type;
  int nb = 0, dims[8] = {0}, strides[8] = {0};
  if (cudnnGetTensorNdDescriptor(d, 8, &type, &nb, dims, strides) != CUDNN_STATUS_SUCCESS) return -1;
  int64_t n = 1;
  for (int i = 0; i < nb; ++i) n *= dims[i];
  return n;
}

// Where each gate's matrix and bias of torch's weights goes in the space, merged into runs.
int weight_layout(cudnnHandle_t handle, const KfCudnnRnn* rnn, Plan* p) {
  const int directions = rnn->bidirectional ? 2 : 1;
  const int gates = gates_of(rnn);
  const int per = rnn->has_biases ? 4 : 2;
  const int64_t hidden = rnn->hidden_size;
  if (rnn->num_weights != rnn->num_layers * directions * per) {
    return fail(rnn, "expected " + std::to_string(rnn->num_layers * directions * per) + " weights, got " +
                         std::to_string(rnn->num_weights));
  }
  cudnnTensorDescriptor_t m = nullptr, b = nullptr;
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateTensorDescriptor(&m));
  KF_BACKEND_CALL_FOR(rnn, cudnnCreateTensorDescriptor(&b));
  std::string problem;
  for (int layer = 0; layer < rnn->num_layers && problem.empty(); ++layer) {
    const int64_t in = layer == 0 ? rnn->input_size : directions * hidden;
    for (int dir = 0; dir < directions && problem.empty(); ++dir) {
      const int pseudo = layer * directions + dir;
      const int first = pseudo * per;  // w_ih; w_hh, b_ih, b_hh follow
      for (int lin = 0; lin < 2 * gates; ++lin) {
        void* maddr = nullptr;
        void* baddr = nullptr;
        const cudnnStatus_t s = cudnnGetRNNWeightParams(handle, p->rnn, pseudo, p->weight_bytes, p->space, lin, m,
                                                        &maddr, b, &baddr);
        if (s != CUDNN_STATUS_SUCCESS) {
          problem = kf_cudnn_backend::describe_failure("cudnnGetRNNWeightParams", s);
          break;
        }
        const bool recurrent = lin >= gates;
        const int gate = recurrent ? lin - gates : lin;
        const int64_t cols = recurrent ? hidden : in;
        if (maddr == nullptr || baddr == nullptr || elements_of(m) != hidden * cols || elements_of(b) != hidden) {
          problem = "cuDNN's weight layout differs from torch's (pseudo-layer " + std::to_string(pseudo) +
                    ", linear layer " + std::to_string(lin) + ")";
          break;
        }
        const int64_t mat_at = (static_cast<char*>(maddr) - reinterpret_cast<char*>(p->space)) / 4;
        const int64_t bias_at = (static_cast<char*>(baddr) - reinterpret_cast<char*>(p->space)) / 4;
        p->runs.push_back({first + (recurrent ? 1 : 0), gate * hidden * cols, mat_at, hidden * cols});
        if (rnn->has_biases) p->runs.push_back({first + (recurrent ? 3 : 2), gate * hidden, bias_at, hidden});
      }
    }
  }
  (void)cudnnDestroyTensorDescriptor(m);
  (void)cudnnDestroyTensorDescriptor(b);
  if (!problem.empty()) return fail(rnn, problem);
  // Merge runs that continue each other in the same tensor and in the space (torch's own layout: one per tensor).
  std::sort(p->runs.begin(), p->runs.end(),
            [](const Run& a, const Run& b) { return std::tie(a.weight, a.offset) < std::tie(b.weight, b.offset); });
  std::vector<Run> merged;
  for (const Run& r : p->runs) {
    if (!merged.empty()) {
      Run& last = merged.back();
      if (last.weight == r.weight && last.offset + last.count == r.offset &&
          last.space_offset + last.count == r.space_offset) {
        last.count += r.count;
        continue;
      }
    }
    merged.push_back(r);
  }
  p->runs = merged;
  return 0;
}

int make_plan(KfContext* ctx, cudnnHandle_t handle, const KfCudnnRnn* rnn, Plan* p) {
  int rc = make_descriptors(handle, rnn, p);
  if (rc != 0) return rc;
  KF_CUDA(cudaMalloc(reinterpret_cast<void**>(&p->space), p->weight_bytes));
  KF_CUDA(cudaMemsetAsync(p->space, 0, p->weight_bytes, ctx->stream));  // before the first copy, in order
  return weight_layout(handle, rnn, p);
}

// Copies the weights into the space on the stream: one launch per kRunsPerLaunch runs.
int pack(KfContext* ctx, const KfCudnnRnn* rnn, const Plan& p, const void* const* weights) {
  for (size_t begin = 0; begin < p.runs.size(); begin += kRunsPerLaunch) {
    const size_t end = std::min(p.runs.size(), begin + kRunsPerLaunch);
    CopyRuns runs;
    int64_t longest = 1;
    for (size_t i = begin; i < end; ++i) {
      const Run& r = p.runs[i];
      runs.src[i - begin] = static_cast<const float*>(weights[r.weight]) + r.offset;
      runs.dst[i - begin] = r.space_offset;
      runs.count[i - begin] = r.count;
      longest = std::max(longest, r.count);
    }
    const int n = static_cast<int>(end - begin);
    const dim3 grid(std::min<unsigned int>(kf_grid(longest, 256), 64u), static_cast<unsigned int>(n));
    pack_weights<<<grid, 256, 0, ctx->stream>>>(runs, n, p.space);
    KF_LAUNCHED();
  }
  return 0;
}

struct Key {
  const KfCudnnRnn* rnn;
  int device;
  bool operator<(const Key& o) const { return std::tie(rnn, device) < std::tie(o.rnn, o.device); }
};

}  // namespace kf_cudnn_rnn_impl

extern "C" int kf_cudnn_rnn(KfContext* ctx, const KfCudnnRnn* rnn, const void* x, const void* h0, const void* c0,
                            const void* const* weights, void* out, void* hy, void* cy) {
  using namespace kf_cudnn_rnn_impl;
  static std::map<Key, Plan>* plans = new std::map<Key, Plan>();  // never freed, as the conv plans
  std::lock_guard<std::mutex> lock(kf_cudnn_backend::conv_mutex());
  cudnnHandle_t handle = static_cast<cudnnHandle_t>(kf_cudnn_handle(ctx));
  if (handle == nullptr) return kf_fail(1, "%s: no cuDNN handle for device %d", rnn->name, ctx->device);
  const Key key{rnn, ctx->device};
  auto it = plans->find(key);
  if (it == plans->end()) {
    Plan p;
    const int rc = make_plan(ctx, handle, rnn, &p);
    if (rc != 0) return rc;  // descriptors of a failed plan are left (a failed first call is an error anyway)
    it = plans->emplace(key, p).first;
    if (kf_cudnn_backend::log_enabled()) {
      std::fprintf(stderr, "kforge cudnn: %s: RNN weight space %zu bytes in %zu runs, workspace %zu bytes\n", rnn->name,
                   p.weight_bytes, p.runs.size(), p.workspace_bytes);
    }
  }
  const Plan& p = it->second;
  const int rc = pack(ctx, rnn, p, weights);
  if (rc != 0) return rc;
  std::string why;
  void* ws = kf_cudnn_backend::workspace_for(ctx, static_cast<int64_t>(p.workspace_bytes), &why);
  if (p.workspace_bytes > 0 && ws == nullptr) return fail(rnn, "the cuDNN RNN's " + why);
  const bool lstm = rnn->cell_mode == CUDNN_LSTM;
  KF_BACKEND_CALL_FOR(rnn, cudnnRNNForward(handle, p.rnn, CUDNN_FWD_MODE_INFERENCE, nullptr, p.x, x, p.y, out, p.h,
                                           h0, hy, p.h, lstm ? c0 : nullptr, lstm ? cy : nullptr, p.weight_bytes,
                                           p.space, p.workspace_bytes, ws, 0, nullptr));
  return 0;
}

#undef KF_BACKEND_CALL_FOR
