// Reduction kernels shared by the reduce, argreduce, norm and loss emitters (see reduce_common.h).
#include "codegen/reduce_common.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdlib>
#include <sstream>

namespace kforge::codegen::reduce {

namespace {

constexpr int64_t kTargetBlocks = 2112;  // 16 blocks per SM of an H200: enough to fill it
constexpr int64_t kGridCap = 4224;       // grid-stride loops beyond this
constexpr int64_t kWarpRowMax = 1024;    // rows up to this length get one warp each
constexpr int64_t kGroupRowMax = 16;     // rows up to this length share a warp (a group of lanes each)

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::string ll(int64_t v) {
  return std::to_string(v) + "LL";
}

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

std::string compute_type(ir::DType t) {
  if (t == ir::DType::kFloat64) return "double";
  if (ir::is_floating(t)) return "float";
  return "long long";
}

std::string half_headers(const std::vector<ir::DType>& types) {
  for (auto t : types) {
    if (t == ir::DType::kFloat16 || t == ir::DType::kBFloat16)
      return "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
  }
  return "";
}

Layout make_layout(const ir::Shape& shape, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return make_layout(shape, strides, reduced);
}

Layout make_layout(const ir::Shape& shape, const std::vector<int64_t>& strides, const std::vector<int64_t>& reduced) {
  // Kept dims stay in the output's order (output o is their linear index); reduced dims go outer to inner by
  // stride (any order sums the same elements, the innermost one walks memory). Neighbours in either list
  // merge where they walk memory as one dim. For a contiguous tensor this is the plain coalescing.
  std::vector<std::pair<int64_t, int64_t>> kept, red;  // (size, stride)
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    const bool r = std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(i)) != reduced.end();
    (r ? red : kept).emplace_back(shape[i], strides[i]);
  }
  std::stable_sort(red.begin(), red.end(),
                   [](const auto& a, const auto& b) { return std::llabs(a.second) > std::llabs(b.second); });
  auto merge = [](std::vector<std::pair<int64_t, int64_t>>& dims, std::vector<int64_t>& sizes,
                  std::vector<int64_t>& out_strides, int64_t& count) {
    for (const auto& [size, stride] : dims) {
      if (!sizes.empty() && out_strides.back() == stride * size) {
        sizes.back() *= size;
        out_strides.back() = stride;
      } else {
        sizes.push_back(size);
        out_strides.push_back(stride);
      }
      count *= size;
    }
  };
  Layout l;
  merge(kept, l.kept_sizes, l.kept_strides, l.M);
  merge(red, l.red_sizes, l.red_strides, l.N);
  // Rows when the reduced dims hold the innermost stride (for a contiguous tensor: the last dim is reduced).
  auto innermost = [](const std::vector<int64_t>& st) {
    int64_t m = INT64_MAX;
    for (auto x : st) m = std::min<int64_t>(m, std::llabs(x));
    return m;
  };
  l.rows = l.kept_sizes.empty() || (!l.red_sizes.empty() && innermost(l.red_strides) < innermost(l.kept_strides));
  return l;
}

std::string index_fn(const std::string& name, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                     int64_t total) {
  std::ostringstream os;
  os << "__device__ __forceinline__ long long " << name << "(long long i) {\n";
  if (sizes.empty()) {
    os << "  (void)i;\n  return 0;\n}\n";
    return os.str();
  }
  if (sizes.size() == 1) {
    os << "  return i" << (strides[0] == 1 ? "" : " * " + ll(strides[0])) << ";\n}\n";
    return os.str();
  }
  bool small = total <= 2147483647LL;
  std::string suffix = small ? "u" : "LL";
  os << (small ? "  unsigned int u = (unsigned int)i;\n" : "  long long u = i;\n") << "  long long off = 0;\n";
  for (size_t d = sizes.size(); d-- > 1;) {
    os << "  off += (long long)(u % " << sizes[d] << suffix << ") * " << ll(strides[d]) << ";\n"
       << "  u /= " << sizes[d] << suffix << ";\n";
  }
  os << "  off += (long long)u * " << ll(strides[0]) << ";\n  return off;\n}\n";
  return os.str();
}

std::string lse_acc(const std::string& A, const std::string& CT) {
  const std::string ex = CT == "double" ? "exp" : "expf";
  std::ostringstream os;
  os << "struct " << A << " {\n"
     << "  " << CT << " m;\n"
     << "  double s;\n"
     << "  __device__ __forceinline__ void add(" << CT << " x) {\n"
     << "    if (x > m) {\n"
     << "      s = s * " << (CT == "float" ? "(double)expf(m - x)" : "exp(m - x)") << " + 1.0;\n"
     << "      m = x;\n"
     << "    } else if (x <= m) {\n"
     << "      if (x != -INFINITY && m != INFINITY) s += (double)" << ex << "(x - m);\n"
     << "    } else {\n"
     << "      m = NAN;\n"
     << "    }\n"
     << "  }\n";
  if (CT == "float") {
    // Four elements at once: one rescale for their maximum, then four float exps summed (no branch
    // per element; a new maximum costs one float exp, not a double one per element).
    os << "  __device__ __forceinline__ void add4(float x0, float x1, float x2, float x3) {\n"
       << "    if (kf_isnan(m) || kf_isnan(x0) || kf_isnan(x1) || kf_isnan(x2) || kf_isnan(x3)) {\n"
       << "      m = NAN;\n"
       << "      return;\n"
       << "    }\n"
       << "    const float b = fmaxf(fmaxf(x0, x1), fmaxf(x2, x3));\n"
       << "    if (b > m) {\n"
       << "      s = m == -INFINITY ? 0.0 : s * (double)expf(m - b);\n"
       << "      m = b;\n"
       << "    }\n"
       << "    if (m == -INFINITY || m == INFINITY) return;\n"
       << "    s += (double)((expf(x0 - m) + expf(x1 - m)) + (expf(x2 - m) + expf(x3 - m)));\n"
       << "  }\n";
  }
  // The merge's rescale factor exp(m - o.m) is in [0, 1]: for float elements a float exp is as
  // accurate as the float result needs, and far cheaper than a double one (a warp merge takes five).
  const std::string scale = CT == "float" ? "(double)expf" : "exp";
  os << "  __device__ __forceinline__ void merge(const " << A << "& o) {\n"
     << "    if (kf_isnan(m) || kf_isnan(o.m)) {\n"
     << "      m = NAN;\n"
     << "    } else if (o.m > m) {\n"
     << "      s = o.s + (m == -INFINITY ? 0.0 : s * " << scale << "(m - o.m));\n"
     << "      m = o.m;\n"
     << "    } else if (o.m != -INFINITY && m != INFINITY) {\n"
     << "      s += o.s * " << scale << "(o.m - m);\n"
     << "    }\n"
     << "  }\n"
     << "  __device__ __forceinline__ " << A << " shfl_down(int d) const {\n"
     << "    " << A << " r;\n"
     << "    r.m = __shfl_down_sync(0xffffffffu, m, d);\n"
     << "    r.s = __shfl_down_sync(0xffffffffu, s, d);\n"
     << "    return r;\n"
     << "  }\n"
     << "};\n";
  return os.str();
}

std::string device_prelude() {
  return R"(#ifndef KF_REDUCE_PRELUDE
#define KF_REDUCE_PRELUDE
// NaN test that also compiles (as false) for integer types.
template <class T>
__device__ __forceinline__ bool kf_isnan(T x) { return x != x; }
// Tree merge of a warp's accumulators; lane 0 holds the result.
template <class A>
__device__ __forceinline__ void kf_warp_merge(A& a) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    A o = a.shfl_down(d);
    a.merge(o);
  }
}
// Tree merge within aligned groups of G lanes (G a power of two, at most 32); each group's first lane holds
// its result (it reads only lanes of its own group).
template <int G, class A>
__device__ __forceinline__ void kf_group_merge(A& a) {
#pragma unroll
  for (int d = G / 2; d > 0; d >>= 1) {
    A o = a.shfl_down(d);
    a.merge(o);
  }
}
// Merge over a 1-D block (blockDim.x a multiple of 32); thread 0 holds the result. sm: 32 entries.
template <class A>
__device__ __forceinline__ A kf_block_merge(A a, A* sm) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  kf_warp_merge(a);
  __syncthreads();
  if (lane == 0) sm[w] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 1; k < nw; ++k) a.merge(sm[k]);
  }
  return a;
}
#endif
)";
}

namespace {

// The unrolled strided loop over reduced indices [j0, j1) starting at `start`, step G.
std::string strided_loop(const Spec& s, const std::string& start, const std::string& G, const std::string& indent) {
  const std::string& P = s.prefix;
  std::ostringstream os;
  os << indent << "long long j = " << start << ";\n"
     << indent << "for (; j + 3LL * " << G << " < j1; j += 4LL * " << G << ") {\n"
     << indent << "  const long long ja = j, jb = j + " << G << ", jc = j + 2LL * " << G << ", jd = j + 3LL * " << G
     << ";\n"
     << indent << "  const " << s.elem << " va = " << P << "_LOAD(base + " << P << "_red(ja));\n"
     << indent << "  const " << s.elem << " vb = " << P << "_LOAD(base + " << P << "_red(jb));\n"
     << indent << "  const " << s.elem << " vc = " << P << "_LOAD(base + " << P << "_red(jc));\n"
     << indent << "  const " << s.elem << " vd = " << P << "_LOAD(base + " << P << "_red(jd));\n";
  for (const char* k : {"a", "b", "c", "d"}) {
    os << indent << "  { const " << s.elem << " v = v" << k << "; const long long j = j" << k << "; (void)j; " << s.add
       << " }\n";
  }
  os << indent << "}\n"
     << indent << "for (; j < j1; j += " << G << ") {\n"
     << indent << "  const " << s.elem << " v = " << P << "_LOAD(base + " << P << "_red(j));\n"
     << indent << "  " << s.add << "\n"
     << indent << "}\n";
  return os.str();
}

}  // namespace

Code emit(const Spec& s) {
  const Layout& l = s.layout;
  const std::string& P = s.prefix;
  const std::string& A = s.acc;
  Code c;
  std::ostringstream dev, host;
  dev << "static_assert(sizeof(" << A << ") <= " << s.acc_bytes << ", \"accumulator size\");\n"
      << "#define " << P << "_LOAD(off) (" << s.load << ")\n"
      << index_fn(P + "_base", l.kept_sizes, l.kept_strides, l.M)
      << index_fn(P + "_red", l.red_sizes, l.red_strides, l.N);

  const int64_t M = l.M, N = l.N;
  int64_t S = 1, CH = std::max<int64_t>(N, 1);
  bool warp = false, vec = false;
  int64_t TX = 0, TY = 0;
  std::string main_launch;
  if (l.rows) {
    warp = N <= kWarpRowMax;
    if (!warp) {
      if (M < kTargetBlocks / 2) S = std::min(ceil_div(kTargetBlocks, M), std::max<int64_t>(1, ceil_div(N, 8192)));
      CH = ceil_div(ceil_div(N, S), 4) * 4;
      S = ceil_div(N, CH);
      vec = !s.vec_ptr.empty() && l.contiguous_rows() && N % 4 == 0 && CH % 4 == 0;
      for (auto st : l.kept_strides) vec = vec && st % 4 == 0;
    }
  } else {
    TY = N >= 64 ? 8 : 1;
    TX = 256 / TY;
    int64_t tiles = ceil_div(M, TX);
    if (tiles < kTargetBlocks / 2)
      S = std::min(ceil_div(kTargetBlocks, tiles), std::max<int64_t>(1, ceil_div(N, TY * 256)));
    CH = std::max<int64_t>(ceil_div(N, S), 1);
    S = std::max<int64_t>(ceil_div(N, CH), 1);
  }
  const std::string part_param = A + "* __restrict__ part";
  const int B = s.block;
  std::string pass1_store = S == 1 ? s.store : "part[o * " + ll(S) + " + s] = a;";

  if (warp && N <= kGroupRowMax) {
    // Rows of at most 16: a group of G lanes per row (G = N rounded up to a power of two), 32 / G rows per
    // warp, so that a warp reads 32 / G consecutive rows at once instead of idling 32 - N lanes. Every lane
    // of a warp runs each step (rows past the end add nothing) so that the shuffles see the whole warp.
    const int64_t G = std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(N, 1)));
    const int64_t R = 32 / G;
    const int64_t warp_steps = ceil_div(M, R);
    c.mode = "groups of " + std::to_string(G) + " lanes per row";
    dev << "__global__ void __launch_bounds__(256) " << P << "_groups(" << s.params << ") {\n"
        << "  const long long lane = threadIdx.x & " << (G - 1) << ";\n"
        << "  const long long slot = (threadIdx.x & 31) / " << G << ";\n"
        << "  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
        << "  const long long nwarps = (gridDim.x * (long long)blockDim.x) >> 5;\n"
        << "  for (long long w = warp; w < " << ll(warp_steps) << "; w += nwarps) {\n"
        << "    const long long o = w * " << ll(R) << " + slot;\n"
        << "    const bool live = o < " << ll(M) << ";\n"
        << "    const long long base = live ? " << P << "_base(o) : 0LL;\n"
        << "    " << A << " a;\n"
        << "    " << s.init << "\n"
        << "    const long long j1 = live ? " << ll(N) << " : 0LL;\n"
        << "    {\n"
        << strided_loop(s, "lane", ll(G), "      ") << "    }\n"
        << "    kf_group_merge<" << G << ">(a);\n"
        << "    if (live && lane == 0) { " << s.store << " }\n"
        << "  }\n"
        << "}\n";
    int64_t blocks = std::min(ceil_div(warp_steps, 8), kGridCap);
    host << "  " << P << "_groups<<<" << blocks << ", 256, 0, ctx->stream>>>(" << s.args << ");\n"
         << "  KF_LAUNCHED();\n";
    c.launches = 1;
  } else if (warp) {
    c.mode = "warp";
    dev << "__global__ void __launch_bounds__(256) " << P << "_warps(" << s.params << ") {\n"
        << "  const long long lane = threadIdx.x & 31;\n"
        << "  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
        << "  const long long nwarps = (gridDim.x * (long long)blockDim.x) >> 5;\n"
        << "  for (long long o = warp; o < " << ll(M) << "; o += nwarps) {\n"
        << "    const long long base = " << P << "_base(o);\n"
        << "    " << A << " a;\n"
        << "    " << s.init << "\n"
        << "    const long long j1 = " << ll(N) << ";\n"
        << "    {\n"
        << strided_loop(s, "lane", "32LL", "      ") << "    }\n"
        << "    kf_warp_merge(a);\n"
        << "    if (lane == 0) { " << s.store << " }\n"
        << "  }\n"
        << "}\n";
    int64_t blocks = std::min(ceil_div(M, 8), kGridCap);
    host << "  " << P << "_warps<<<" << blocks << ", 256, 0, ctx->stream>>>(" << s.args << ");\n"
         << "  KF_LAUNCHED();\n";
    c.launches = 1;
  } else if (l.rows) {
    c.mode = "rows";
    int64_t tasks = M * S;
    dev << "template <bool VEC>\n"
        << "__global__ void __launch_bounds__(" << B << ") " << P << "_rows(" << s.params << ", " << part_param
        << ") {\n"
        << "  __shared__ " << A << " sm[32];\n"
        << "  for (long long task = blockIdx.x; task < " << ll(tasks) << "; task += gridDim.x) {\n"
        << "    const long long o = task / " << ll(S) << ";\n"
        << "    const long long s = task - o * " << ll(S) << ";\n"
        << "    (void)s;\n"
        << "    const long long base = " << P << "_base(o);\n"
        << "    " << A << " a;\n"
        << "    " << s.init << "\n"
        << "    const long long j0 = s * " << ll(CH) << ";\n"
        << "    const long long j1 = j0 + " << ll(CH) << " < " << ll(N) << " ? j0 + " << ll(CH) << " : " << ll(N)
        << ";\n";
    if (vec) {
      // The four lanes of the 16-byte vector `w` (and `u`, of vec_ptr2) loaded at vector index `q`,
      // added in order.
      const bool two = !s.vec_ptr2.empty();
      auto add4 = [&](int k, const std::string& q, const std::string& indent) {
        std::ostringstream a;
        a << indent << "{\n" << indent << "  const long long jq = j0 + 4LL * (" << q << ");\n";
        const char* lane[4] = {"x", "y", "z", "w"};
        if (!s.add_vec.empty()) {
          // The four elements as v0..v3, added at once.
          a << indent << "  (void)jq;\n";
          const std::string& ve = s.vec_elem.empty() ? s.elem : s.vec_elem;
          for (int l = 0; l < 4; ++l) {
            const std::string w = "w" + std::to_string(k) + "." + lane[l];
            const std::string v = "v" + std::to_string(l);
            const std::string jl = "const long long jl = jq + " + std::to_string(l) + "; (void)jl; ";
            if (two) {
              a << indent << "  " << ve << " " << v << "; { " << jl << "const float V0 = " << w
                << "; const float V1 = u" << k << "." << lane[l] << "; " << v << " = " << s.vec_value << "; }\n";
            } else if (!s.vec_value.empty()) {
              a << indent << "  " << ve << " " << v << "; { " << jl << "const float V0 = " << w << "; " << v << " = "
                << s.vec_value << "; }\n";
            } else {
              a << indent << "  const float " << v << " = " << w << ";\n";
            }
          }
          a << indent << "  " << s.add_vec << "\n" << indent << "}\n";
          return a.str();
        }
        for (int l = 0; l < 4; ++l) {
          const std::string w = "w" + std::to_string(k) + "." + lane[l];
          a << indent << "  { const long long jl = jq" << (l ? " + " + std::to_string(l) : "") << "; (void)jl; ";
          if (two) {
            a << "const float V0 = " << w << "; const float V1 = u" << k << "." << lane[l] << "; const " << s.elem
              << " v = " << s.vec_value << ";";
          } else if (!s.vec_value.empty()) {
            a << "const float V0 = " << w << "; const " << s.elem << " v = " << s.vec_value << ";";
          } else {
            a << "const float v = " << w << ";";
          }
          a << " const long long j = jq" << (l ? " + " + std::to_string(l) : "") << "; (void)j; " << s.add << " }\n";
        }
        a << indent << "}\n";
        return a.str();
      };
      auto loads = [&](const std::string& w, const std::string& u, const std::string& q) {
        std::string t = "const float4 " + w + " = p4[" + q + "];";
        if (two) t += " const float4 " + u + " = q4[" + q + "];";
        return t;
      };
      // Four vectors loaded (per pointer) before any is added (more bytes in flight per thread), then the rest.
      dev << "    if (VEC) {\n"
          << "      const float4* p4 = reinterpret_cast<const float4*>(" << s.vec_ptr << " + base + j0);\n";
      if (two) dev << "      const float4* q4 = reinterpret_cast<const float4*>(" << s.vec_ptr2 << " + base + j0);\n";
      dev << "      const long long n4 = (j1 - j0) >> 2;\n"
          << "      long long q = threadIdx.x;\n"
          << "      for (; q + " << 3 * B << "LL < n4; q += " << 4 * B << "LL) {\n"
          << "        " << loads("w0", "u0", "q") << "\n"
          << "        " << loads("w1", "u1", "q + " + ll(B)) << "\n"
          << "        " << loads("w2", "u2", "q + " + ll(2 * B)) << "\n"
          << "        " << loads("w3", "u3", "q + " + ll(3 * B)) << "\n"
          << add4(0, "q", "        ") << add4(1, "q + " + ll(B), "        ") << add4(2, "q + " + ll(2 * B), "        ")
          << add4(3, "q + " + ll(3 * B), "        ") << "      }\n"
          << "      for (; q < n4; q += " << B << "LL) {\n"
          << "        " << loads("w4", "u4", "q") << "\n"
          << add4(4, "q", "        ") << "      }\n"
          << "    } else {\n"
          << strided_loop(s, "j0 + (long long)threadIdx.x", ll(B), "      ") << "    }\n";
    } else {
      dev << "    {\n" << strided_loop(s, "j0 + (long long)threadIdx.x", ll(B), "      ") << "    }\n";
    }
    dev << "    a = kf_block_merge(a, sm);\n"
        << "    if (threadIdx.x == 0) { " << pass1_store << " }\n"
        << "  }\n"
        << "}\n";
    int64_t blocks = std::min(tasks, kGridCap);
    std::string part_arg = S > 1 ? P + "_part" : "nullptr";
    if (vec) {
      host << "  if ((reinterpret_cast<uintptr_t>(" << s.vec_host << ") & 15) == 0"
           << (s.vec_ptr2.empty() ? "" : " && (reinterpret_cast<uintptr_t>(" + s.vec_host2 + ") & 15) == 0") << ") {\n"
           << "    " << P << "_rows<true><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << s.args << ", "
           << part_arg << ");\n"
           << "  } else {\n"
           << "    " << P << "_rows<false><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << s.args << ", "
           << part_arg << ");\n"
           << "  }\n";
    } else {
      host << "  " << P << "_rows<false><<<" << blocks << ", " << B << ", 0, ctx->stream>>>(" << s.args << ", "
           << part_arg << ");\n";
    }
    host << "  KF_LAUNCHED();\n";
    c.launches = 1;
  } else {
    c.mode = "cols";
    int64_t tiles = ceil_div(M, TX);
    int64_t tasks = tiles * S;
    dev << "__global__ void __launch_bounds__(" << TX * TY << ") " << P << "_cols(" << s.params << ", " << part_param
        << ") {\n";
    if (TY > 1) dev << "  __shared__ " << A << " sm[" << TY << "][" << TX << "];\n";
    dev << "  for (long long task = blockIdx.x; task < " << ll(tasks) << "; task += gridDim.x) {\n"
        << "    const long long tile = task / " << ll(S) << ";\n"
        << "    const long long s = task - tile * " << ll(S) << ";\n"
        << "    const long long o = tile * " << ll(TX) << " + threadIdx.x;\n"
        << "    const bool valid = o < " << ll(M) << ";\n"
        << "    const long long base = valid ? " << P << "_base(o) : 0;\n"
        << "    " << A << " a;\n"
        << "    " << s.init << "\n"
        << "    if (valid) {\n"
        << "      const long long j0 = s * " << ll(CH) << ";\n"
        << "      const long long j1 = j0 + " << ll(CH) << " < " << ll(N) << " ? j0 + " << ll(CH) << " : " << ll(N)
        << ";\n"
        << strided_loop(s, "j0 + (long long)threadIdx.y", ll(TY), "      ") << "    }\n";
    if (TY > 1) {
      dev << "    sm[threadIdx.y][threadIdx.x] = a;\n"
          << "    __syncthreads();\n"
          << "    if (threadIdx.y == 0) {\n"
          << "      for (int y = 1; y < " << TY << "; ++y) a.merge(sm[y][threadIdx.x]);\n"
          << "    }\n"
          << "    __syncthreads();\n";
    }
    dev << "    if (threadIdx.y == 0 && valid) { " << pass1_store << " }\n"
        << "  }\n"
        << "}\n";
    int64_t blocks = std::min(tasks, kGridCap);
    host << "  " << P << "_cols<<<" << blocks << ", dim3(" << TX << ", " << TY << "), 0, ctx->stream>>>(" << s.args
         << ", " << (S > 1 ? P + "_part" : "nullptr") << ");\n"
         << "  KF_LAUNCHED();\n";
    c.launches = 1;
  }

  c.workspace_bytes = s.workspace_offset;
  if (S > 1) {
    c.mode += ", split " + std::to_string(S);
    size_t part_bytes = static_cast<size_t>(M) * static_cast<size_t>(S) * static_cast<size_t>(s.acc_bytes);
    c.workspace_bytes = s.workspace_offset + align256(part_bytes);
    dev << "__global__ void __launch_bounds__(256) " << P << "_fin(" << s.params << ", const " << A
        << "* __restrict__ part) {\n"
        << "  __shared__ " << A << " sm[32];\n"
        << "  for (long long o = blockIdx.x; o < " << ll(M) << "; o += gridDim.x) {\n"
        << "    const long long base = " << P << "_base(o);\n"
        << "    " << A << " a;\n"
        << "    " << s.init << "\n"
        << "    for (long long s = threadIdx.x; s < " << ll(S) << "; s += blockDim.x) a.merge(part[o * " << ll(S)
        << " + s]);\n"
        << "    a = kf_block_merge(a, sm);\n"
        << "    if (threadIdx.x == 0) { " << s.store << " }\n"
        << "  }\n"
        << "}\n";
    std::string pre = "  if (ctx->workspace_bytes < " + std::to_string(c.workspace_bytes) +
                      "ULL) return kf_fail(3, \"" + P + ": workspace of %zu bytes is smaller than the " +
                      std::to_string(c.workspace_bytes) + " it needs\", ctx->workspace_bytes);\n  " + A + "* " + P +
                      "_part = reinterpret_cast<" + A + "*>(static_cast<char*>(ctx->workspace) + " +
                      std::to_string(s.workspace_offset) + "ULL);\n";
    std::string h = pre + host.str();
    host.str("");
    host << h << "  " << P << "_fin<<<" << std::min(M, kGridCap) << ", 256, 0, ctx->stream>>>(" << s.args << ", " << P
         << "_part);\n"
         << "  KF_LAUNCHED();\n";
    c.launches += 1;
  }
  dev << "#undef " << P << "_LOAD\n";
  c.device = dev.str();
  c.host = host.str();
  return c;
}

}  // namespace kforge::codegen::reduce
