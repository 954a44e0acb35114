// Helpers shared by the seed library's category files.
#include "synth/seed_op.h"

#include <cstdio>

namespace kforge::synth {

const char* category_name(Category c) {
  switch (c) {
    case Category::kLinear: return "linear";
    case Category::kConvolution: return "convolution";
    case Category::kActivation: return "activation";
    case Category::kElementwise: return "elementwise math";
    case Category::kNormalization: return "normalization";
    case Category::kPooling: return "pooling";
    case Category::kReduction: return "reduction";
    case Category::kScan: return "scan";
    case Category::kLoss: return "loss";
    case Category::kAttention: return "attention";
    case Category::kLayout: return "layout";
  }
  return "?";
}

namespace seed {

std::vector<StartShape> any_start() {
  return {{Layout::kFeatures, 2}, {Layout::kSequence, 3}, {Layout::kChannels, 3},
          {Layout::kChannels, 4}, {Layout::kChannels, 5}, {Layout::kHeads, 4}};
}

bool is_float(const TensorState& t) {
  return t.floating;
}

int draw_dim(const TensorState& t, Rng& rng, int from) {
  return static_cast<int>(rng.uniform_int(from, t.rank() - 1));
}

std::string dim_literal(const TensorState& t, int d, Rng& rng) {
  if (rng.chance(0.5)) return std::to_string(d - t.rank());
  return std::to_string(d);
}

std::string tuple_literal(const std::vector<int64_t>& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

std::string float_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

TensorState drop_dim(const TensorState& t, int d) {
  TensorState r = t;
  r.dims.erase(r.dims.begin() + (d - 1));
  r.names.erase(r.names.begin() + (d - 1));
  const bool channel_dropped = t.layout == Layout::kChannels && d == 1;
  switch (r.rank()) {
    case 1: r.layout = Layout::kFlat; break;
    case 2: r.layout = Layout::kFeatures; break;
    case 3: r.layout = t.layout == Layout::kChannels && !channel_dropped ? Layout::kChannels : Layout::kSequence; break;
    default: r.layout = t.layout == Layout::kChannels && !channel_dropped ? Layout::kChannels : Layout::kGeneric; break;
  }
  return r;
}

std::string size_arg(TaskSource& src, const TensorState& t, int d, const std::string& base, bool init_arg) {
  const std::string& name = t.names[static_cast<size_t>(d - 1)];
  if (!name.empty()) {
    if (init_arg) src.use_as_init_arg(name);
    return name;
  }
  return src.constant(base, std::to_string(t.dims[static_cast<size_t>(d - 1)]), init_arg);
}

void module_or_call(TaskSource& src, Rng& rng, const std::string& member_base, const std::string& module,
                    const std::string& call) {
  if (!module.empty() && (call.empty() || rng.chance(0.5))) {
    std::string m = src.member(member_base);
    src.init_line("self." + m + " = " + module);
    src.forward_line("x = self." + m + "(x)");
  } else {
    src.forward_line("x = " + call);
  }
}

}  // namespace seed

}  // namespace kforge::synth
