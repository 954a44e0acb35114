// Roofline costs: FLOPs per op family, compulsory bytes per kernel, ceilings of the H200.
#include "costmodel/roofline.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/recurrent.h"
#include "ir/shape_rules.h"
#include "kernels/forms.h"
#include "kernels/split_tf32.h"

namespace kforge::costmodel {

namespace {

// cuDNN's TF32 convolutions on the H200 reach a fraction of the TF32 peak, lower for NCHW tensors
// than for channels-last ones: level2/1's conv module (Conv2d 64->128, 3x3, batch 128, its bias add
// included) ran at 111 and 182 TFLOP/s in the layout probe; the 15 probed convs' median channels-last
// speed-up was 1.47x (bench/NOTES.md run 6). The transposes are counted as bytes at the roofline's
// bandwidth (run 6's 32x32 scalar tiles ran at half that; run 7's 16-byte tiles near Inductor's).
constexpr double kConvRateNchw = 0.30;
constexpr double kConvRateChannelsLast = 0.45;
// kforge's implicit GEMM (conv_implicit_gemm: mma.sync m16n8k8, operands from shared memory, no wgmma):
// an assumed fraction of the TF32 peak; the convolutions it takes are bound by their result's write.
constexpr double kConvRateImplicitGemm = 0.35;
// A recurrent layer on cuDNN (cudnn_rnn): the input GEMMs of all steps run at once, the recurrent ones step
// by step, small and latency-bound. Assumed, not measured yet: the GEMMs at this fraction of the TF32 peak,
// plus a fixed latency per time step and layer (both directions of a layer step together).
constexpr double kRnnRate = 0.25;
constexpr double kRnnStepSeconds = 6e-6;

double prod(const ir::Shape& s, size_t from = 0) {
  double p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

bool uses_tensor_cores(const ir::Node& n, const schedule::Schedule& s, const schedule::Kernel* k = nullptr) {
  auto f = ir::op_info(n.op).family;
  // An einsum counts as a contraction when it runs as a cuBLAS GEMM (einsum_gemm).
  bool contraction = f == ir::OpFamily::kMatmul || f == ir::OpFamily::kLinear || f == ir::OpFamily::kAttention ||
                     (f == ir::OpFamily::kEinsum && k != nullptr && k->strategy == schedule::Strategy::kCublasGemm);
  // cuDNN runs fp32 convolutions and recurrent layers in TF32 by default (as PyTorch's reference does).
  bool cudnn_tf32 = f == ir::OpFamily::kConv || f == ir::OpFamily::kConvTranspose || f == ir::OpFamily::kRecurrent;
  // Precision 3xtf32: cuDNN on exact FMA engines, attention's batched GEMMs exact fp32, the other GEMMs split
  // (split_tf32 below).
  if (s.precision == "3xtf32") return contraction && f != ir::OpFamily::kAttention;
  return cudnn_tf32 || (contraction && s.precision != "fp32");
}

// A float32 cuBLAS GEMM kernel under precision 3xtf32 (kernels/split_tf32.h): three TF32 products per
// product, and the split's copies of the operands. nullopt where the kernel is not split (another
// precision, or per-batch pointers: exact fp32).
std::optional<kernels::SplitTf32Gemm> split_tf32(const ir::Graph& g, const schedule::Schedule& s,
                                                 const schedule::Kernel& k) {
  if (s.precision != "3xtf32" || k.impl != schedule::Impl::kLibrary || k.strategy != schedule::Strategy::kCublasGemm)
    return std::nullopt;
  // The GEMM's node: the first (linear_epilogue), or the root after the permutes it reads through.
  int node = k.nodes.front();
  for (int n : k.nodes) {
    const auto f = ir::op_info(g.nodes()[static_cast<size_t>(n)].op).family;
    if (f == ir::OpFamily::kMatmul || f == ir::OpFamily::kLinear || f == ir::OpFamily::kEinsum) {
      node = n;
      break;
    }
  }
  auto gemm = kernels::split_tf32_gemm_of(g, g.nodes()[static_cast<size_t>(node)], &k);
  if (!gemm.ok || gemm.chunks.chunks == 0) return std::nullopt;
  return gemm;
}

}  // namespace

double node_flops(const ir::Graph& g, const ir::Node& n) {
  const ir::TensorType& out = g.type(n.output);
  const ir::TensorType& in0 = g.type(n.inputs.empty() || n.inputs[0] == ir::kNoValue ? n.output : n.inputs[0]);
  switch (ir::op_info(n.op).family) {
    case ir::OpFamily::kMatmul: {
      const auto& a = g.type(n.inputs[0]).shape;
      double k = static_cast<double>(a.back());
      return 2.0 * prod(out.shape) * k;
    }
    case ir::OpFamily::kLinear: return 2.0 * prod(out.shape) * static_cast<double>(g.type(n.inputs[1]).shape[1]);
    case ir::OpFamily::kConv: {
      const auto& w = g.type(n.inputs[1]).shape;  // (Cout, Cin/groups, k...)
      return 2.0 * prod(out.shape) * prod(w, 1);
    }
    case ir::OpFamily::kConvTranspose: {
      const auto& w = g.type(n.inputs[1]).shape;  // (Cin, Cout/groups, k...)
      return 2.0 * prod(in0.shape) * prod(w, 1);
    }
    case ir::OpFamily::kAttention: {
      const auto& q = g.type(n.inputs[0]).shape;
      const auto& k = g.type(n.inputs[1]).shape;
      double s_len = static_cast<double>(k[k.size() - 2]);
      return 2.0 * prod(q) * s_len + 2.0 * prod(out.shape) * s_len;
    }
    case ir::OpFamily::kEinsum: {
      double total = 1;
      std::set<char> seen;
      auto spec = ir::parse_einsum(n.attrs.s("equation"), n.inputs.size());
      if (!spec.is_ok()) return prod(out.shape);
      for (size_t i = 0; i < spec->operands.size(); ++i) {
        const auto& sh = g.type(n.inputs[i]).shape;
        for (size_t d = 0; d < sh.size(); ++d) {
          if (seen.insert(spec->operands[i][d]).second) total *= static_cast<double>(sh[d]);
        }
      }
      return 2.0 * total;
    }
    case ir::OpFamily::kPool: {
      double window = prod(n.attrs.ints("kernel_size"));
      return prod(out.shape) * window;
    }
    case ir::OpFamily::kReshape: return 0;
    case ir::OpFamily::kFft: {
      // 5 n log2(n) real operations per transform of n complex points (the radix-2 count), n the transformed size.
      const int64_t k = n.attrs.i("ndim");
      const auto& sh = n.op == ir::OpId::kFftR2c ? in0.shape : out.shape;
      const size_t rank = sh.size() - (n.op == ir::OpId::kFftC2c ? 1 : 0);
      double points = 1;
      for (size_t d = rank >= static_cast<size_t>(k) ? rank - static_cast<size_t>(k) : 0; d < rank; ++d)
        points *= static_cast<double>(sh[d]);
      const double batch = std::max(prod(sh) / std::max(points, 1.0) / (n.op == ir::OpId::kFftC2c ? 2.0 : 1.0), 1.0);
      return batch * 5.0 * points * std::log2(std::max(points, 2.0));
    }
    case ir::OpFamily::kRecurrent: {
      // The GEMMs, and about 10 pointwise operations per gate and step.
      auto r = ir::rnn_geometry(g, n);
      if (!r.is_ok()) return prod(out.shape);
      return r->gemm_flops() +
             10.0 * static_cast<double>(r->gates) * static_cast<double>(r->state_numel()) * static_cast<double>(r->seq);
    }
    // Data movement: index arithmetic per output element, no arithmetic on the values.
    case ir::OpFamily::kIndex:
    case ir::OpFamily::kUnfold:
    case ir::OpFamily::kPad:
    case ir::OpFamily::kCumExtreme: return prod(out.shape);
    // Blends of 2 (linear, per resampled dim) values per output element; fold sums its kernel window.
    case ir::OpFamily::kResample:
      return n.op == ir::OpId::kUpsampleLinear ? prod(out.shape) * 3.0 * std::pow(2.0, n.attrs.ints("size").size())
                                               : prod(out.shape);
    case ir::OpFamily::kFold: return prod(out.shape) * prod(n.attrs.ints("kernel_size"));
    case ir::OpFamily::kScatter: return prod(g.type(n.inputs[1]).shape);
    case ir::OpFamily::kOrder: {
      // Per row of n: a bitonic sort's n/2 log2(n)^2 compare-exchanges up to 4096, n^2 comparisons beyond.
      const auto& sh = in0.shape;
      const int64_t rank = static_cast<int64_t>(std::max<size_t>(sh.size(), 1));
      const int64_t d = (n.attrs.i("dim") + rank) % rank;
      const double len = sh.empty() ? 1.0 : static_cast<double>(sh[static_cast<size_t>(d)]);
      const double per = len <= 4096 ? 0.5 * std::pow(std::ceil(std::log2(std::max(len, 2.0))), 2.0) : len;
      return prod(sh) * per;
    }
    default:
      // Elementwise, reductions, norms, scans, losses: a handful of operations per input element.
      return 4.0 * std::max(prod(in0.shape), prod(out.shape));
  }
}

KernelCost kernel_cost(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k,
                       const DeviceCeilings& d) {
  KernelCost c;
  c.kernel = k.name;
  if (k.impl == schedule::Impl::kAlias) {
    c.bound = "launch";
    return c;
  }
  if (k.strategy == schedule::Strategy::kConstantFill) {
    // The constant_output skill's fill: its absorbed nodes do not run; it only writes its output.
    c.bytes = static_cast<double>(g.type(g.nodes()[static_cast<size_t>(k.root())].output).bytes());
    double memory = c.bytes / d.bytes_per_second;
    c.seconds = memory + d.launch_seconds;
    c.bound = memory < d.launch_seconds ? "launch" : "memory";
    return c;
  }
  std::set<ir::ValueIndex> produced;
  std::set<ir::ValueIndex> read;
  bool tensor_cores = false;
  for (int n : k.nodes) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
    c.flops += node_flops(g, node);
    tensor_cores = tensor_cores || uses_tensor_cores(node, s, &k);
    produced.insert(node.output);
    for (auto in : node.inputs) {
      if (in != ir::kNoValue && !produced.count(in)) read.insert(in);
    }
  }
  for (auto v : read) c.bytes += static_cast<double>(g.type(v).bytes());
  // An index op reads only the rows (elements) its indices pick: at most its output's worth of its
  // data input (an embedding table is mostly never read).
  const ir::Node& root = g.nodes()[static_cast<size_t>(k.root())];
  // embedding_bag reads one row's worth per index, its output being one row per bag.
  if (k.nodes.size() == 1 && ir::op_info(root.op).family == ir::OpFamily::kIndex) {
    const double table = static_cast<double>(g.type(root.inputs[0]).bytes());
    double picked = static_cast<double>(g.type(root.output).bytes());
    if (root.op == ir::OpId::kEmbeddingBag) {
      const auto& w = g.type(root.inputs[0]);
      picked = static_cast<double>(g.type(root.inputs[1]).numel()) * static_cast<double>(w.shape[1]) *
               static_cast<double>(ir::dtype_size(w.dtype));
    }
    c.bytes -= table - std::min(table, picked);
  }
  const double out_bytes = static_cast<double>(g.type(g.nodes()[static_cast<size_t>(k.root())].output).bytes());
  c.bytes += out_bytes;
  // A convolution with its epilogue: the library writes its result, the epilogue (or the channel
  // reduction of conv_reduce_epilogue) reads it. (The conv_epilogue, conv_reduce_epilogue and
  // linear_epilogue skills' kernels: the only library kernels of several nodes.)
  // kforge's implicit GEMM (conv_implicit_gemm) computes the chain in its stores: no such pass.
  const bool implicit_gemm = k.knob(schedule::Knob::kImplicitGemm, 0) == 1;
  // (A matmul reading permutes in place, gemm_permuted_operands, has no such pass.)
  if (k.impl == schedule::Impl::kLibrary && k.nodes.size() > 1 && !implicit_gemm &&
      (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose ||
       k.strategy == schedule::Strategy::kCublasGemm) &&
      kernels::kernel_form(g, k) != kernels::KernelForm::kGemmPermutedOperands) {
    c.bytes += 2 * static_cast<double>(g.type(g.nodes()[static_cast<size_t>(k.nodes.front())].output).bytes());
  }
  // Convolutions on cuDNN at their engines' rate (kConvRate*); channels-last pays the transposes of
  // input and weight, and of the output unless the pass back replaces the bias or epilogue pass.
  double conv_rate = 1.0;
  if (k.impl == schedule::Impl::kLibrary &&
      (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose)) {
    const ir::Node& conv = g.nodes()[static_cast<size_t>(k.nodes.front())];
    if (implicit_gemm) {
      conv_rate = kConvRateImplicitGemm;
    } else if (k.knob(schedule::Knob::kChannelsLast, 0) == 1 && conv.inputs.size() >= 2) {
      const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue;
      c.bytes += 2.0 * static_cast<double>(g.type(conv.inputs[0]).bytes() + g.type(conv.inputs[1]).bytes());
      if (!has_bias && k.nodes.size() == 1) c.bytes += 2 * out_bytes;
      conv_rate = kConvRateChannelsLast;
    } else {
      conv_rate = kConvRateNchw;
    }
  }
  double serial = 0;  // latency of steps that cannot overlap (a recurrent layer's time steps)
  if (k.impl == schedule::Impl::kLibrary && k.strategy == schedule::Strategy::kCudnnRnn) {
    conv_rate = kRnnRate;
    if (auto r = ir::rnn_geometry(g, root); r.is_ok()) {
      serial = kRnnStepSeconds * static_cast<double>(r->seq) * static_cast<double>(r->layers);
    }
  }
  double tc_work = 1.0;  // tensor-core products per product
  double launches = 1.0;
  if (auto gemm = split_tf32(g, s, k)) {
    c.bytes += gemm->added_bytes();
    tc_work = 3.0;
    launches = 3.0 * static_cast<double>(gemm->chunks.chunks);
  } else if (s.precision == "3xtf32" && k.strategy == schedule::Strategy::kCublasGemm) {
    tensor_cores = false;  // not split (per-batch pointers): exact fp32
  }
  double compute = tc_work * c.flops / ((tensor_cores ? d.tf32_flops : d.fp32_flops) * conv_rate);
  double memory = c.bytes / d.bytes_per_second;
  c.seconds = std::max(compute, memory) + serial + launches * d.launch_seconds;
  c.bound = std::max(compute, memory) + serial < d.launch_seconds
                ? "launch"
                : (serial > std::max(compute, memory) ? "latency" : (compute > memory ? "compute" : "memory"));
  return c;
}

ProgramCost program_cost(const ir::Graph& g, const schedule::Schedule& s, const DeviceCeilings& d) {
  ProgramCost p;
  for (const auto& k : s.kernels) {
    p.kernels.push_back(kernel_cost(g, s, k, d));
    p.seconds += p.kernels.back().seconds;
  }
  double bytes = 0;
  double flops = 0;
  for (const auto& in : g.inputs()) bytes += static_cast<double>(g.type(in.value).bytes());
  for (const auto& pr : g.params()) bytes += static_cast<double>(g.type(pr.value).bytes());
  for (auto o : g.outputs()) bytes += static_cast<double>(g.type(o).bytes());
  bool tc = false;
  for (const auto& n : g.nodes()) flops += node_flops(g, n);
  // Tensor cores where any kernel of the schedule uses them (an einsum's only through its kernel's
  // strategy, cublas_gemm); a 3xTF32 GEMM does three tensor-core products per product.
  for (const auto& k : s.kernels) {
    for (int i : k.nodes) tc = tc || uses_tensor_cores(g.nodes()[static_cast<size_t>(i)], s, &k);
    if (auto gemm = split_tf32(g, s, k)) flops += 2 * gemm->flops;
  }
  p.floor_seconds = std::max(flops / (tc ? d.tf32_flops : d.fp32_flops), bytes / d.bytes_per_second) + d.launch_seconds;
  return p;
}

}  // namespace kforge::costmodel
