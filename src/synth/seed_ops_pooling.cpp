// Seed library: pooling over the spatial dims of (batch, channels, spatial...) tensors: max, average
// and adaptive pools in 1, 2 and 3 dimensions.
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

enum class Pool { kMax, kAvg, kAdaptiveAvg, kAdaptiveMax };

std::string pool_class(Pool p, int sd) {
  const char* base = p == Pool::kMax           ? "MaxPool"
                     : p == Pool::kAvg         ? "AvgPool"
                     : p == Pool::kAdaptiveAvg ? "AdaptiveAvgPool"
                                               : "AdaptiveMaxPool";
  return std::string(base) + std::to_string(sd) + "d";
}

std::string pool_function(Pool p, int sd) {
  const char* base = p == Pool::kMax           ? "max_pool"
                     : p == Pool::kAvg         ? "avg_pool"
                     : p == Pool::kAdaptiveAvg ? "adaptive_avg_pool"
                                               : "adaptive_max_pool";
  return "F." + std::string(base) + std::to_string(sd) + "d";
}

std::optional<Placed> windowed(Pool p, int sd, const TensorState& in, Rng& rng, TaskSource& src) {
  const std::vector<int64_t> sp(in.dims.begin() + 1, in.dims.end());
  int64_t k = sd == 3 ? 2 : rng.pick(std::vector<int64_t>{2, 2, 3, 4});
  int64_t s = rng.chance(0.7) ? k : rng.pick(std::vector<int64_t>{1, 2});
  int64_t pad = rng.chance(0.7) ? 0 : k / 2;
  TensorState out = in;
  for (size_t i = 0; i < sp.size(); ++i) {
    int64_t o = (sp[i] + 2 * pad - k) / s + 1;
    if (sp[i] < k || o < 1) return std::nullopt;
    out.dims[i + 1] = o;
    out.names[i + 1] = "";
  }
  // The module takes its kernel size as a constructor argument; the functional call spells it out.
  const bool module = rng.chance(0.5);
  std::string kw =
      "kernel_size=" + (module ? src.constant("pool_kernel_size", std::to_string(k), true) : std::to_string(k));
  if (s != k) kw += ", stride=" + std::to_string(s);
  if (pad) kw += ", padding=" + std::to_string(pad);
  if (p == Pool::kAvg && pad && rng.chance(0.5)) kw += ", count_include_pad=False";
  if (module) {
    std::string m = src.member(p == Pool::kMax ? "max_pool" : "avg_pool");
    src.init_line("self." + m + " = nn." + pool_class(p, sd) + "(" + kw + ")");
    src.forward_line("x = self." + m + "(x)");
  } else {
    src.forward_line("x = " + pool_function(p, sd) + "(x, " + kw + ")");
  }
  return Placed{out, static_cast<double>(out.sample_numel() * k * sd)};
}

std::optional<Placed> adaptive(Pool p, int sd, const TensorState& in, Rng& rng, TaskSource& src) {
  const std::vector<int64_t> sp(in.dims.begin() + 1, in.dims.end());
  int64_t smallest = *std::min_element(sp.begin(), sp.end());
  std::vector<int64_t> sizes;
  for (int64_t o : {1, 1, 2, 4, 7, 8, 16}) {
    if (o <= smallest && o * 2 <= smallest + 1) sizes.push_back(o);
  }
  if (sizes.empty()) return std::nullopt;
  int64_t o = rng.pick(sizes);
  TensorState out = in;
  for (size_t i = 0; i < sp.size(); ++i) {
    out.dims[i + 1] = o;
    out.names[i + 1] = "";
  }
  std::string size = std::to_string(o);
  if (sd > 1 && rng.chance(0.5)) size = seed::tuple_literal(std::vector<int64_t>(static_cast<size_t>(sd), o));
  if (rng.chance(0.5)) {
    std::string c = src.constant("output_size", size, true);
    std::string m = src.member(p == Pool::kAdaptiveAvg ? "adaptive_avg_pool" : "adaptive_max_pool");
    src.init_line("self." + m + " = nn." + pool_class(p, sd) + "(" + c + ")");
    src.forward_line("x = self." + m + "(x)");
  } else {
    src.forward_line("x = " + pool_function(p, sd) + "(x, " + size + ")");
  }
  return Placed{out, static_cast<double>(in.sample_numel())};
}

SeedOp pool_op(Pool p, int sd) {
  SeedOp op;
  op.name = "torch.nn." + pool_class(p, sd);
  op.short_name = pool_class(p, sd);
  op.category = Category::kPooling;
  op.registry_ops = {p == Pool::kMax           ? "max_pool"
                     : p == Pool::kAvg         ? "avg_pool"
                     : p == Pool::kAdaptiveAvg ? "adaptive_avg_pool"
                                               : "adaptive_max_pool"};
  op.starts = {{Layout::kChannels, sd + 2}};
  op.accepts = [sd](const TensorState& t) { return t.floating && t.layout == Layout::kChannels && t.rank() == sd + 2; };
  op.instantiate = [p, sd](const TensorState& in, Rng& rng, TaskSource& src) {
    return p == Pool::kMax || p == Pool::kAvg ? windowed(p, sd, in, rng, src) : adaptive(p, sd, in, rng, src);
  };
  return op;
}

}  // namespace

void add_pooling_ops(std::vector<SeedOp>& ops) {
  for (Pool p : {Pool::kMax, Pool::kAvg, Pool::kAdaptiveAvg, Pool::kAdaptiveMax}) {
    for (int sd = 1; sd <= 3; ++sd) ops.push_back(pool_op(p, sd));
  }
}

}  // namespace kforge::synth
