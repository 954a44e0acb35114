// The skill catalogue (docs/skills.md describes each entry for people).
#include "skills/skill.h"

#include <algorithm>
#include <array>

#include "ir/strided_view.h"
#include "kernels/forms.h"
#include "skills/batch_norm_inference.h"
#include "skills/constant_output.h"
#include "skills/conv_channels_last.h"
#include "skills/conv_engine_search.h"
#include "skills/conv_epilogue.h"
#include "skills/conv_implicit_gemm.h"
#include "skills/conv_reduce_epilogue.h"
#include "skills/einsum_gemm.h"
#include "skills/fuse_elementwise.h"
#include "skills/gemm_permuted_operands.h"
#include "skills/linear_epilogue.h"
#include "skills/loss_prologue.h"
#include "skills/norm_epilogue.h"
#include "skills/precision.h"
#include "skills/reduce_prologue.h"
#include "skills/scan_exclusive.h"
#include "skills/scan_prologue.h"
#include "skills/scan_reverse.h"

namespace kforge::skills {

namespace {

constexpr auto kCatalogue = std::to_array<Skill>({
    // Graph rewrites that hold for every input come first: they remove kernels the others would tune.
    {"constant_output",
     "writes a graph output that value ranges prove constant (e.g. clamp(min(x, 0), 0, 1) = 0) as a fill of "
     "that constant and drops the kernels that only fed it; exact for every input whose reference output has "
     "no NaN (a NaN input, or inf - inf upstream, would give NaN there and the constant here); costs nothing",
     constant_output_sites, constant_output},
    {"batch_norm_inference",
     "makes a batch_norm with running statistics (eval mode) a per-channel affine map in a pointwise kernel, "
     "so the fusion skills can join it to its neighbours; costs nothing (the same math as torch's inference "
     "transform)",
     batch_norm_inference_sites, batch_norm_inference},
    {"fuse_elementwise",
     "joins a producer chain of elementwise ops to its consumer chain when the producer's result has the "
     "consumer's shape and no one else reads it; saves one write and one read of that tensor and a launch; "
     "costs nothing (registers); a producer of views alone (permute, slice, unfold, expand, flip, a reshape "
     "that strides allow) is read in place instead: the gathered copy is never made",
     fuse_elementwise_sites, fuse_elementwise},
    {"conv_epilogue",
     "makes the elementwise chain after a cuDNN convolution its epilogue: the convolution writes into the "
     "chain's output and one generated pass adds the bias and computes the chain in place; saves one read and "
     "one write of the output and a launch (the bias was its own pass); costs nothing",
     conv_epilogue_sites, conv_epilogue},
    {"linear_epilogue",
     "makes the elementwise chain after a cuBLAS linear its epilogue: the GEMM writes x W^T into the chain's "
     "output and one generated pass adds the bias and computes the chain in place; saves the bias broadcast "
     "(a write of the output) and the GEMM's read of it (beta = 1); rounds the bias add separately",
     linear_epilogue_sites, linear_epilogue},
    {"norm_epilogue",
     "makes the elementwise chain after a normalization with batch statistics (batch, instance, group, layer "
     "norm) part of its apply pass: each normalized value goes through the chain before its one store; saves "
     "one read and one write of the norm's result and a launch; costs nothing (registers)",
     norm_epilogue_sites, norm_epilogue},
    {"reduce_prologue",
     "computes a pointwise chain whose only reader is a reduction inside the reduction's kernel, where the "
     "reduction loads each element (x ** 2 before a mean, abs before a sum): the chain's result is never "
     "stored; saves a write and a read of it and a launch; the reduction keeps its 16-byte loads when the "
     "chain reads one or two full-shape float tensors, and loses them otherwise; a chain of views alone "
     "(permute, slice, unfold, ...) becomes the reduction's strides over the view's source, loads kept "
     "where its rows stay contiguous",
     reduce_prologue_sites, reduce_prologue},
    {"loss_prologue",
     "computes a pointwise chain whose only reader is the prediction of an elementwise loss (log before a "
     "kl_div) inside the loss's kernel, where the loss reads each prediction: the chain's result is never "
     "stored; saves a write and a read of it and a launch; the loss keeps its 16-byte loads when the chain "
     "reads one full-shape float tensor",
     loss_prologue_sites, loss_prologue},
    {"scan_prologue",
     "computes a pointwise chain whose only reader is a scan (cumsum, cumprod) inside the scan's kernel, where "
     "the scan loads each element (x * mask before a cumsum): the chain's result is never stored; saves a write "
     "and a read of it and a launch; costs the row scans their vectorized block loads (coalesced evaluations "
     "exchanged through shared memory instead)",
     scan_prologue_sites, scan_prologue},
    {"scan_reverse",
     "makes flip(cumsum(flip(x))) along the scan's dim (a reverse cumulative sum or product) one scan kernel "
     "that walks the dim from its end, reading x and writing at mirrored indices; exact (the same additions in "
     "the same order); saves two full copies (the flips) and two launches",
     scan_reverse_sites, scan_reverse},
    {"scan_exclusive",
     "makes cat([identity of size 1, cumsum(slice(x, 0 .. L - 2))]) along one dim (an exclusive cumulative sum or "
     "product) one scan kernel that reads x in place and writes the running result one position on, the "
     "identity at position 0; exact; saves the slice's and the scan's copies, the concatenation and three "
     "launches",
     scan_exclusive_sites, scan_exclusive},
    {"einsum_gemm",
     "runs an einsum that is one (batched) GEMM on its operands as stored (e.g. bijl,lk->bijk) as a cuBLAS GEMM "
     "instead of kforge's generated tiled contraction, its views and transposes folded into the GEMM's "
     "dimensions; exact (fp32 compute); then eligible for tf32_contractions; costs nothing",
     einsum_gemm_sites, einsum_gemm},
    {"gemm_permuted_operands",
     "reads a permute that only a cuBLAS matmul reads (k.transpose(-2, -1) before q @ k^T, a head split's "
     "permute(0, 2, 1, 3), A.T @ B) in place in the GEMM, through its leading dimension, transpose flag and "
     "batch strides (per-batch pointers where the batch dims have no single stride), instead of copying it; "
     "applied where one of the operand's matrix dims is contiguous in the stored tensor; exact; saves a write "
     "and a read of the operand and a launch",
     gemm_permuted_operands_sites, gemm_permuted_operands},
    {"tf32_contractions",
     "runs float32 cuBLAS GEMMs and attention on TF32 tensor cores (fp32 accumulate) when the protocol's "
     "tolerance is at least 1e-3; about 5-8x the fp32 rate on an H200; costs ~5e-4 relative error per product",
     tf32_contractions_sites, tf32_contractions},
    {"split_tf32_contractions",
     "runs float32 cuBLAS GEMMs (linear, matmul, einsum) in 3xTF32: each operand split into a TF32 part and its "
     "remainder, one TF32 GEMM per chain of at most 2048 of K over the three products that matter (fp32 "
     "accumulate); about 1.2e-6 of sum |a||b| per output against exact, so it keeps kernelbench's 1e-4 where TF32 "
     "does not; applied where the GEMMs are large enough (at least 1 GFLOP and 48 FLOPs per byte the split adds), "
     "their output rows 16-byte aligned, and no kernel runs on cuDNN; costs the split's copies of the operands",
     split_tf32_contractions_sites, split_tf32_contractions},
    {"conv_implicit_gemm",
     "runs a float32 2-d convolution whose reduction C_in * kh * kw is at most 160 (C_out a multiple of 8 up to "
     "64) as kforge's own implicit GEMM on TF32 tensor cores: the NCHW input read once, the weights held in "
     "shared memory, the NCHW result written once with the bias and the conv_epilogue chain; such a "
     "convolution is bound by the write of its result, which cuDNN's paths make two or three passes; costs "
     "TF32's rounding (tolerance >= 1e-3, as cuDNN's own TF32 engines)",
     conv_implicit_gemm_sites, conv_implicit_gemm},
    {"conv_channels_last",
     "runs a float32 cuDNN convolution (1-3 spatial dims) on channels-last copies of its input and weight "
     "(torch.compile's layout for convs) and brings the result back to NCHW in one tiled pass that also adds "
     "the bias and computes the conv_epilogue chain; cuDNN's channels-last engines ran 1.3-2.1x faster on an "
     "H200; costs the transposes (applied where the conv has at least 40 FLOPs per byte they add) and another "
     "TF32 engine's rounding (tolerance >= 1e-3)",
     conv_channels_last_sites, conv_channels_last},
    {"conv_reduce_epilogue",
     "computes what reads a channels-last convolution's result in the pass over cuDNN's channels-last rows "
     "(each position's channels contiguous) instead of the transpose back to NCHW: a softmax, log_softmax or "
     "sum/mean/amax/amin over the channels (up to 352), a reduction over every spatial dim (global average "
     "pool), an instance or group norm (statistics from the rows, the normalization in the transpose back), "
     "or a 2-d pool of non-overlapping windows; then the elementwise chain after it; saves a full write and "
     "read of the convolution's result and a launch or two; costs nothing",
     conv_reduce_epilogue_sites, conv_reduce_epilogue},
    {"conv_engine_search",
     "times several cuDNN engines (torch's candidates, in its order) on a convolution's first call and keeps "
     "the fastest, as torch.backends.cudnn.benchmark does (torch's default runs the first that works); costs "
     "the first call three runs of each engine and another engine's rounding (tolerance >= 1e-3)",
     conv_engine_search_sites, conv_engine_search},
});
static_assert(kCatalogue.size() == kNumSkills, "skills::kNumSkills must count the catalogue");

}  // namespace

const std::vector<Skill>& all_skills() {
  static const std::vector<Skill> skills(kCatalogue.begin(), kCatalogue.end());
  return skills;
}

bool is_pointwise_chain(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.strategy != schedule::Strategy::kElementwise) return false;
  for (int n : k.nodes) {
    if (!ir::is_pointwise(g.nodes()[static_cast<size_t>(n)])) return false;
  }
  return true;
}

bool joins_reader(const ir::Graph& g, const schedule::Kernel& k) {
  if (is_pointwise_chain(g, k)) return true;
  const bool views_alone = std::all_of(k.nodes.begin(), k.nodes.end(), [&](int n) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
    return !ir::is_pointwise(node) && ir::is_view_op(node.op);
  });
  if (views_alone)
    return k.impl == schedule::Impl::kAlias ||
           (k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kGather);
  return k.impl == schedule::Impl::kGenerated && k.strategy == schedule::Strategy::kElementwise &&
         ir::is_pointwise(g.nodes()[static_cast<size_t>(k.root())]) && kernels::reads_through_views(g, k.nodes);
}

bool joined_reads_through_views(const ir::Graph& g, const schedule::Kernel& producer, const schedule::Kernel& consumer,
                                bool consumer_root_too) {
  std::vector<int> joined = producer.nodes;
  joined.insert(joined.end(), consumer.nodes.begin(), consumer.nodes.end() - (consumer_root_too ? 0 : 1));
  return kernels::reads_through_views(g, joined);
}

std::vector<Site> pair_sites(const ir::Graph& g, const schedule::Schedule& s, PairRule illegal,
                             std::string (*what)(const std::string& producer, const std::string& consumer)) {
  // Only the pairs along the graph's edges are asked (a node of the consumer reads the producer's
  // result): linear in the edges, where every pair would be quadratic in the kernels of an unrolled
  // network. Every rule rejects the other pairs anyway (skill.h).
  std::vector<int> kernel_of_root(g.nodes().size(), -1);
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (!s.kernels[k].nodes.empty()) kernel_of_root[static_cast<size_t>(s.kernels[k].root())] = static_cast<int>(k);
  }
  std::vector<Site> out;
  std::vector<int> producers;
  for (int c = 0; c < static_cast<int>(s.kernels.size()); ++c) {
    producers.clear();
    for (int n : s.kernels[static_cast<size_t>(c)].nodes) {
      for (ir::ValueIndex in : g.nodes()[static_cast<size_t>(n)].inputs) {
        if (in == ir::kNoValue || g.value(in).kind != ir::ValueKind::kNode) continue;
        const int p = kernel_of_root[static_cast<size_t>(g.value(in).owner)];
        if (p >= 0 && p < c) producers.push_back(p);
      }
    }
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    for (int p : producers) {
      if (!illegal(g, s, p, c).empty()) continue;
      Site site;
      site.kernels = {p, c};
      site.what = what(s.kernels[static_cast<size_t>(p)].name, s.kernels[static_cast<size_t>(c)].name);
      out.push_back(std::move(site));
    }
  }
  return out;
}

std::vector<Site> kernel_sites(const ir::Graph& g, const schedule::Schedule& s, KernelRule illegal,
                               std::string (*what)(const std::string& kernel)) {
  std::vector<Site> out;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (!illegal(g, s, s.kernels[k]).empty()) continue;
    Site site;
    site.kernels = {static_cast<int>(k)};
    site.what = what(s.kernels[k].name);
    out.push_back(std::move(site));
  }
  return out;
}

StatusOr<size_t> site_kernel(const ir::Graph& g, const schedule::Schedule& s, const Site& site, KernelRule illegal,
                             std::string_view skill) {
  if (site.kernels.size() != 1 || site.kernels[0] < 0 || site.kernels[0] >= static_cast<int>(s.kernels.size()))
    return invalid_argument(std::string(skill) + " takes a site of one kernel of the schedule");
  const auto k = static_cast<size_t>(site.kernels[0]);
  if (std::string why = illegal(g, s, s.kernels[k]); !why.empty())
    return invalid_argument(std::string(skill) + ": " + s.kernels[k].name + ": " + why);
  return k;
}

StatusOr<schedule::Schedule> set_kernel_knob(const ir::Graph& g, const schedule::Schedule& s, const Site& site,
                                             KernelRule illegal, std::string_view skill, schedule::Knob knob,
                                             int64_t value) {
  KF_ASSIGN_OR_RETURN(const size_t k, site_kernel(g, s, site, illegal, skill));
  schedule::Schedule out = s;
  out.kernels[k].knobs[knob] = value;
  out.applied.push_back(std::string(skill) + ": " + site.what);
  return out;
}

int kernel_of(const schedule::Schedule& s, int node) {
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const auto& nodes = s.kernels[k].nodes;
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) return static_cast<int>(k);
  }
  return -1;
}

bool read_only_by(const ir::Graph& g, ir::ValueIndex v, int node) {
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return false;
  const auto& users = g.users(v);
  return !users.empty() && std::all_of(users.begin(), users.end(), [&](int u) { return u == node; });
}

std::string kept_for_reader_alone(const ir::Graph& g, ir::ValueIndex v, const schedule::Kernel& reader,
                                  const std::string& whose, const std::string& reader_name) {
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end())
    return whose + " result is a graph output, so it must be stored";
  bool read = false;
  for (int user : g.users(v)) {
    if (std::find(reader.nodes.begin(), reader.nodes.end(), user) == reader.nodes.end())
      return whose + " result is also read by " + ir::describe(g, g.nodes()[static_cast<size_t>(user)]);
    read = true;
  }
  return read ? "" : reader_name + " does not read " + whose + " result";
}

std::string prologue_illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer,
                             bool (*consumer_ok)(const ir::Graph&, const schedule::Kernel&),
                             const char* consumer_kind) {
  const int n = static_cast<int>(s.kernels.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer >= consumer)
    return std::string("the chain's kernel must run before the ") + consumer_kind;
  const auto& p = s.kernels[static_cast<size_t>(producer)];
  const auto& c = s.kernels[static_cast<size_t>(consumer)];
  if (!joins_reader(g, p)) return "the producer must be a generated pointwise chain or views of a tensor";
  // The consumer: one node, or one whose prologue (made by this skill) reads the producer's result.
  if (!consumer_ok(g, c) || (c.nodes.size() != 1 && !kernels::has_pointwise_prologue(g, c)))
    return std::string("the consumer must be ") + consumer_kind;
  if (!joined_reads_through_views(g, p, c, false))
    return "the producer's views do not compose to strides over their source (a reshape torch would copy)";
  const ir::ValueIndex v = g.nodes()[static_cast<size_t>(p.root())].output;
  const ir::Node& reader = g.nodes()[static_cast<size_t>(c.root())];
  if (c.nodes.size() == 1 && (reader.inputs.empty() || reader.inputs[0] != v))
    return "the consumer does not read the chain's result";
  if (c.nodes.size() > 1 && std::find(reader.inputs.begin(), reader.inputs.end(), v) != reader.inputs.end())
    return "the consumer's last node reads the chain's result beside its prologue";
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end())
    return "the chain's result is a graph output, so it must be stored";
  for (int user : g.users(v)) {
    if (std::find(c.nodes.begin(), c.nodes.end(), user) == c.nodes.end())
      return "the chain's result is also read by " + ir::describe(g, g.nodes()[static_cast<size_t>(user)]);
  }
  return "";
}

schedule::Schedule join_into_consumer(const schedule::Schedule& s, int producer, int consumer,
                                      const std::string& applied) {
  schedule::Schedule out = s;
  const auto& from = s.kernels[static_cast<size_t>(producer)];
  auto& into = out.kernels[static_cast<size_t>(consumer)];
  into.nodes.insert(into.nodes.begin(), from.nodes.begin(), from.nodes.end());
  out.kernels.erase(out.kernels.begin() + producer);
  out.applied.push_back(applied);
  return out;
}

const Skill* find_skill(std::string_view name) {
  for (const auto& s : all_skills()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace kforge::skills
