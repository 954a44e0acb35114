// Error recording and the CUDA graph of the whole forward, for generated programs (one copy per program
// library).
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "kforge_runtime.cuh"

static thread_local char kf_error_message[2048];

extern "C" int kf_fail(int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(kf_error_message, sizeof kf_error_message, fmt, args);
  va_end(args);
  return code;
}

extern "C" const char* kforge_last_error(void) {
  return kf_error_message;
}

// ---- The whole forward as one CUDA graph ----
// kforge_forward hands kf_graph_forward the function that launches every kernel and the pointers they
// use (every bufs slot, the workspace, the stream). A set of pointers seen before, on a device whose
// library state has grown (cuDNN plans, engine search and workspaces come from an eager first call),
// is captured once into a graph on a private stream and replayed on the caller's stream from then on:
// one launch per call instead of one per kernel. The graph recomputes everything on every replay; it
// is valid only for the pointers it was captured with, which is why they are its key. A capture that
// fails (a kernel that synchronizes, allocates or uses the legacy stream: the capture stream is a
// blocking one, so the legacy stream invalidates it instead of running outside it) falls back to the
// eager launch, and after two failures the library stays eager. KFORGE_CUDA_GRAPHS=0 turns graphs off.
namespace {

constexpr size_t kMaxGraphs = 8;  // cached executables, least recently used evicted
constexpr size_t kMaxSeen = 16;   // keys run eagerly once, waiting for a second call
constexpr int kMaxDevices = 64;

struct KfGraph {
  std::vector<void*> key;
  cudaGraphExec_t exec;
  unsigned long long used;
};

struct KfGraphCache {
  std::mutex mu;
  int enabled = -1;  // -1: KFORGE_CUDA_GRAPHS not read yet
  unsigned generation = 0;
  std::vector<KfGraph> graphs;
  std::vector<std::vector<void*>> seen;
  bool warm[kMaxDevices] = {};
  cudaStream_t capture_stream[kMaxDevices] = {};
  unsigned long long tick = 0, captures = 0, replays = 0, eager = 0, failures = 0;
  char reason[512] = "";
};

KfGraphCache& kf_graph_cache() {
  static auto* cache = new KfGraphCache();  // never destroyed: graphs may outlive static destruction order
  return *cache;
}

std::atomic<unsigned> kf_generation{0};

// Why graphs are not used (or the last capture failed), kept JSON-safe for kforge_cuda_graph_stats.
void kf_graph_reason(KfGraphCache& c, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(c.reason, sizeof c.reason, fmt, args);
  va_end(args);
  for (char* p = c.reason; *p != '\0'; ++p) {
    if (*p == '"' || *p == '\\' || static_cast<unsigned char>(*p) < 0x20) *p = '\'';
  }
}

void kf_graph_drop_all(KfGraphCache& c) {
  for (auto& g : c.graphs) (void)cudaGraphExecDestroy(g.exec);  // in-flight replays finish first
  c.graphs.clear();
  c.seen.clear();
}

bool kf_graph_seen(KfGraphCache& c, const std::vector<void*>& key) {
  for (const auto& k : c.seen) {
    if (k == key) return true;
  }
  if (c.seen.size() == kMaxSeen) c.seen.erase(c.seen.begin());
  c.seen.push_back(key);
  return false;
}

// Captures launch(ctx with the capture stream) into an executable graph; nullptr (and c.reason) if
// the capture or the instantiation failed or the library's buffers moved while capturing.
cudaGraphExec_t kf_graph_capture(KfGraphCache& c, KfContext* ctx, void* const* bufs, KfLaunchAll launch) {
  cudaStream_t& s = c.capture_stream[ctx->device];
  if (s == nullptr && cudaStreamCreateWithFlags(&s, cudaStreamDefault) != cudaSuccess) {
    s = nullptr;
    kf_graph_reason(c, "no capture stream: %s", cudaGetErrorString(cudaGetLastError()));
    return nullptr;
  }
  const unsigned generation = kf_generation.load();
  KfContext on_capture = *ctx;
  on_capture.stream = s;
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    kf_graph_reason(c, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
    return nullptr;
  }
  const int rc = launch(&on_capture, bufs);
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(s, &graph);
  cudaGraphExec_t exec = nullptr;
  if (rc != 0 || e != cudaSuccess || graph == nullptr) {
    kf_graph_reason(c, "capture failed: %s",
                    rc != 0 ? kforge_last_error() : cudaGetErrorString(e != cudaSuccess ? e : cudaErrorUnknown));
  } else if (kf_generation.load() != generation) {
    kf_graph_reason(c, "a library workspace moved while capturing");
  } else if ((e = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess) {
    exec = nullptr;
    kf_graph_reason(c, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  if (exec == nullptr) (void)cudaGetLastError();  // capture errors are not sticky: clear them for the eager call
  return exec;
}

}  // namespace

extern "C" void kf_buffers_moved(void) {
  kf_generation.fetch_add(1);
}

extern "C" int kf_graph_forward(KfContext* ctx, void* const* bufs, int nbufs, KfLaunchAll launch) {
  KfGraphCache& c = kf_graph_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.enabled < 0) {
    const char* env = std::getenv("KFORGE_CUDA_GRAPHS");
    c.enabled = env != nullptr && std::strcmp(env, "0") == 0 ? 0 : 1;
    if (c.enabled == 0) kf_graph_reason(c, "KFORGE_CUDA_GRAPHS=0");
  }
  if (c.enabled == 0 || ctx->device < 0 || ctx->device >= kMaxDevices) {
    ++c.eager;
    return launch(ctx, bufs);
  }
  if (const unsigned g = kf_generation.load(); g != c.generation) {
    kf_graph_drop_all(c);  // a graph would use a freed workspace
    c.generation = g;
  }
  std::vector<void*> key(bufs, bufs + nbufs);
  key.push_back(ctx->workspace);
  key.push_back(static_cast<void*>(ctx->stream));
  key.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(ctx->device)));
  ++c.tick;
  for (auto& g : c.graphs) {
    if (g.key != key) continue;
    g.used = c.tick;
    ++c.replays;
    KF_CUDA(cudaGraphLaunch(g.exec, ctx->stream));
    return 0;
  }
  // New pointers: eager the first time they come (fresh tensors on every call never pay for a capture),
  // captured the second time. After 16 captures that were never replayed, new keys stay eager.
  const bool thrashing = c.captures >= 16 && c.replays < c.captures;
  const bool seen = kf_graph_seen(c, key);
  if (!c.warm[ctx->device] || !seen || thrashing) {
    ++c.eager;
    const int rc = launch(ctx, bufs);
    if (rc == 0) c.warm[ctx->device] = true;
    return rc;
  }
  cudaGraphExec_t exec = kf_graph_capture(c, ctx, bufs, launch);
  if (exec == nullptr) {
    if (++c.failures >= 2) c.enabled = 0;
    ++c.eager;
    return launch(ctx, bufs);
  }
  ++c.captures;
  if (c.graphs.size() == kMaxGraphs) {
    auto oldest = c.graphs.begin();
    for (auto it = c.graphs.begin(); it != c.graphs.end(); ++it) {
      if (it->used < oldest->used) oldest = it;
    }
    (void)cudaGraphExecDestroy(oldest->exec);
    c.graphs.erase(oldest);
  }
  c.graphs.push_back({std::move(key), exec, c.tick});
  KF_CUDA(cudaGraphLaunch(exec, ctx->stream));
  return 0;
}

// For tests and reports: how the calls ran. JSON, valid until the next call from this thread.
extern "C" const char* kforge_cuda_graph_stats(void) {
  static thread_local char text[768];
  KfGraphCache& c = kf_graph_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  std::snprintf(text, sizeof text,
                "{\"enabled\": %s, \"graphs\": %zu, \"captures\": %llu, \"replays\": %llu, \"eager\": %llu, "
                "\"failures\": %llu, \"reason\": \"%s\"}",
                c.enabled == 0 ? "false" : "true", c.graphs.size(), c.captures, c.replays, c.eager, c.failures,
                c.reason);
  return text;
}
