// The seed library's table and its coverage of ops.def.
#include "synth/seed_library.h"

#include <map>

#include "ir/op_registry.h"

namespace kforge::synth {

namespace {

// Registry ops no library class yields, and why (a unit test keeps this list complete).
const std::map<std::string, std::string>& uncovered_reasons() {
  static const std::map<std::string, std::string> reasons = {
      {"identity", "no work: the importer's node for an output that is an input or parameter itself"},
      {"dropout", "stochastic (nn.Dropout, F.dropout, ...): the paper's filter excludes random operators"},
      {"cast", "tasks are fp32 end to end, as KernelBench's; dtype casts are not sampled"},
      {"eq", "float equality on random inputs is (almost) never true; gt/lt/ge/le are sampled inside torch.where"},
      {"ne", "float inequality on random inputs is (almost) always true; gt/lt/ge/le are sampled inside torch.where"},
      {"diag", "2-D only: every synthesized task keeps a batch dimension"},
      {"expand", "a broadcasting view (x.expand) with no work of its own: not an operator class"},
      {"full", "a constant made inside forward (torch.zeros/ones/full): not an operator class of its own"},
      {"reshape", "written through torch.flatten / nn.Flatten / view"},
      {"logical_not", "added to ops.def after the seed library; no class samples it yet"},
      {"logical_and", "added to ops.def after the seed library; no class samples it yet"},
      {"logical_or", "added to ops.def after the seed library; no class samples it yet"},
      {"embedding", "added to ops.def after the seed library; no class samples it yet"},
      {"index_select", "added to ops.def after the seed library; no class samples it yet"},
      {"gather", "added to ops.def after the seed library; no class samples it yet"},
      {"unfold", "added to ops.def after the seed library; no class samples it yet"},
      {"constant_pad", "added to ops.def after the seed library; no class samples it yet"},
      {"floor_divide", "added to ops.def after the seed library; no class samples it yet"},
      {"trunc_divide", "added to ops.def after the seed library; no class samples it yet"},
      {"remainder", "added to ops.def after the seed library; no class samples it yet"},
      {"fmod", "added to ops.def after the seed library; no class samples it yet"},
      {"bitwise_and", "added to ops.def after the seed library; no class samples it yet"},
      {"bitwise_or", "added to ops.def after the seed library; no class samples it yet"},
      {"bitwise_xor", "added to ops.def after the seed library; no class samples it yet"},
      {"bitwise_not", "added to ops.def after the seed library; no class samples it yet"},
      {"reflect_pad", "added to ops.def after the seed library; no class samples it yet"},
      {"replicate_pad", "added to ops.def after the seed library; no class samples it yet"},
      {"circular_pad", "added to ops.def after the seed library; no class samples it yet"},
      {"upsample_nearest", "added to ops.def after the seed library; no class samples it yet"},
      {"upsample_linear", "added to ops.def after the seed library; no class samples it yet"},
      {"upsample_bicubic", "added to ops.def after the seed library; no class samples it yet"},
      {"grid_sample", "added to ops.def after the seed library; no class samples it yet"},
      {"sort", "added to ops.def after the seed library; no class samples it yet"},
      {"argsort", "added to ops.def after the seed library; no class samples it yet"},
      {"topk", "added to ops.def after the seed library; no class samples it yet"},
      {"topk_indices", "added to ops.def after the seed library; no class samples it yet"},
      {"cummax", "added to ops.def after the seed library; no class samples it yet"},
      {"cummin", "added to ops.def after the seed library; no class samples it yet"},
      {"cummax_indices", "added to ops.def after the seed library; no class samples it yet"},
      {"cummin_indices", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter_value", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter_add", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter_amax", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter_amin", "added to ops.def after the seed library; no class samples it yet"},
      {"scatter_prod", "added to ops.def after the seed library; no class samples it yet"},
      {"one_hot", "added to ops.def after the seed library; no class samples it yet"},
      {"embedding_bag", "added to ops.def after the seed library; no class samples it yet"},
      {"fold", "added to ops.def after the seed library; no class samples it yet"},
      {"logcumsumexp", "added to ops.def after the seed library; no class samples it yet"},
      {"fft_r2c", "added to ops.def after the seed library; no class samples it yet"},
      {"fft_c2c", "added to ops.def after the seed library; no class samples it yet"},
      {"fft_c2r", "added to ops.def after the seed library; no class samples it yet"},
      {"digamma", "added to ops.def after the seed library; no class samples it yet"},
      {"polygamma", "added to ops.def after the seed library; no class samples it yet"},
      {"i0", "added to ops.def after the seed library; no class samples it yet"},
      {"i0e", "added to ops.def after the seed library; no class samples it yet"},
      {"i1", "added to ops.def after the seed library; no class samples it yet"},
      {"i1e", "added to ops.def after the seed library; no class samples it yet"},
      {"erfcx", "added to ops.def after the seed library; no class samples it yet"},
      {"ndtri", "added to ops.def after the seed library; no class samples it yet"},
      {"zeta", "added to ops.def after the seed library; no class samples it yet"},
      {"rnn", "nn.LSTM / GRU / RNN kept whole (python/kforge/recurrent.py); no class samples it yet"},
      {"sin", "added to ops.def after the seed library; no class samples it yet"},
      {"cos", "added to ops.def after the seed library; no class samples it yet"},
      {"tan", "added to ops.def after the seed library; no class samples it yet"},
      {"asin", "added to ops.def after the seed library; no class samples it yet"},
      {"acos", "added to ops.def after the seed library; no class samples it yet"},
      {"atan", "added to ops.def after the seed library; no class samples it yet"},
      {"sinh", "added to ops.def after the seed library; no class samples it yet"},
      {"cosh", "added to ops.def after the seed library; no class samples it yet"},
      {"asinh", "added to ops.def after the seed library; no class samples it yet"},
      {"acosh", "added to ops.def after the seed library; no class samples it yet"},
      {"atanh", "added to ops.def after the seed library; no class samples it yet"},
      {"log1p", "added to ops.def after the seed library; no class samples it yet"},
      {"expm1", "added to ops.def after the seed library; no class samples it yet"},
      {"log2", "added to ops.def after the seed library; no class samples it yet"},
      {"log10", "added to ops.def after the seed library; no class samples it yet"},
      {"exp2", "added to ops.def after the seed library; no class samples it yet"},
      {"erfc", "added to ops.def after the seed library; no class samples it yet"},
      {"erfinv", "added to ops.def after the seed library; no class samples it yet"},
      {"lgamma", "added to ops.def after the seed library; no class samples it yet"},
      {"floor", "added to ops.def after the seed library; no class samples it yet"},
      {"ceil", "added to ops.def after the seed library; no class samples it yet"},
      {"round", "added to ops.def after the seed library; no class samples it yet"},
      {"trunc", "added to ops.def after the seed library; no class samples it yet"},
      {"frac", "added to ops.def after the seed library; no class samples it yet"},
      {"atan2", "added to ops.def after the seed library; no class samples it yet"},
      {"hypot", "added to ops.def after the seed library; no class samples it yet"},
      {"isnan",
       "a bool classification (torch.isnan, ..., nan_to_num's pieces): random float inputs hold no NaN or infinity"},
      {"isinf",
       "a bool classification (torch.isnan, ..., nan_to_num's pieces): random float inputs hold no NaN or infinity"},
      {"isposinf",
       "a bool classification (torch.isnan, ..., nan_to_num's pieces): random float inputs hold no NaN or infinity"},
      {"isneginf",
       "a bool classification (torch.isnan, ..., nan_to_num's pieces): random float inputs hold no NaN or infinity"},
  };
  return reasons;
}

}  // namespace

SeedLibrary::SeedLibrary() {
  add_linear_ops(ops_);
  add_convolution_ops(ops_);
  add_activation_ops(ops_);
  add_elementwise_ops(ops_);
  add_normalization_ops(ops_);
  add_pooling_ops(ops_);
  add_reduction_ops(ops_);
  add_loss_ops(ops_);
  add_attention_ops(ops_);
  add_layout_ops(ops_);
}

const SeedLibrary& SeedLibrary::get() {
  static const SeedLibrary lib;
  return lib;
}

const SeedOp* SeedLibrary::find(std::string_view name) const {
  for (const auto& op : ops_) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::vector<RegistryCoverage> registry_coverage(const SeedLibrary& lib) {
  std::vector<RegistryCoverage> out;
  for (const auto& info : ir::all_ops()) {
    RegistryCoverage c;
    c.op = info.name;
    for (const auto& op : lib.ops()) {
      for (const auto& r : op.registry_ops) {
        if (r == info.name) c.classes.push_back(op.name);
      }
    }
    if (c.classes.empty()) {
      auto it = uncovered_reasons().find(info.name);
      c.reason = it != uncovered_reasons().end() ? it->second : "";
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<OutsideRegistry>& classes_outside_registry() {
  static const std::vector<OutsideRegistry> list = {
      {"transformers library operators (standalone tasks in the paper)",
       "the transformers package is not a dependency of kforge; its blocks are not in ops.def"},
      {"torch.nn.MultiheadAttention, torch.nn.Transformer*",
       "F.multi_head_attention_forward is not in ops.def (its pieces are: linear, sdpa, softmax)"},
      {"torch.nn.RNN/LSTM/GRU", "recurrences are not in ops.def"},
      {"torch.index_add/index_put", "writes by index other than scatter and scatter_add are not in ops.def"},
      {"torch.nn.LocalResponseNorm, nn.Bilinear, nn.CosineSimilarity", "not in ops.def (the importer rejects them)"},
      {"torch.unique/nonzero", "data-dependent shapes are not in ops.def (sort and topk are)"},
      {"torch.nn.Dropout*, torch.rand*/randn*/bernoulli in forward", "stochastic: excluded by the paper's filter"},
  };
  return list;
}

}  // namespace kforge::synth
