// Seed library: activations (torch.nn activation modules and their functional forms).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

using seed::float_literal;

// How an activation maps the value domain.
enum class Range { kKeep, kNonNegative, kPositive, kReal, kKeepNonNegative };

Domain out_domain(Domain in, Range r) {
  switch (r) {
    case Range::kKeep: return in;
    case Range::kNonNegative: return Domain::kNonNegative;
    case Range::kPositive: return Domain::kPositive;
    case Range::kReal: return Domain::kReal;
    case Range::kKeepNonNegative: return in == Domain::kReal ? Domain::kReal : Domain::kNonNegative;
  }
  return Domain::kReal;
}

// An activation: its module spelling and functional spellings for arguments `args` ("" or ", a=1.0").
struct Activation {
  const char* name;
  const char* short_name;
  const char* registry_op;
  const char* member;
  const char* module;                  // "nn.ReLU" (constructed with the drawn keyword arguments)
  std::vector<const char*> functions;  // "torch.relu", "F.relu"
  Range range;
  // Draws keyword arguments, "" for none: "negative_slope=0.1".
  std::function<std::string(Rng&)> draw_args;
};

SeedOp make(const Activation& a) {
  SeedOp op;
  op.name = a.name;
  op.short_name = a.short_name;
  op.category = Category::kActivation;
  op.registry_ops = {a.registry_op};
  op.starts = seed::any_start();
  op.accepts = seed::is_float;
  op.instantiate = [a](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    std::string args = a.draw_args ? a.draw_args(rng) : "";
    std::string module = std::string(a.module) + "(" + args + ")";
    std::string call = std::string(rng.pick(a.functions)) + "(x" + (args.empty() ? "" : ", " + args) + ")";
    seed::module_or_call(src, rng, a.member, module, call);
    Placed p{in, 4.0 * static_cast<double>(in.sample_numel())};
    p.out.domain = out_domain(in.domain, a.range);
    return p;
  };
  return op;
}

std::string pick_kw(Rng& rng, const char* key, const std::vector<double>& values) {
  return std::string(key) + "=" + float_literal(rng.pick(values));
}

}  // namespace

void add_activation_ops(std::vector<SeedOp>& ops) {
  const std::vector<Activation> table = {
      {"torch.nn.ReLU", "ReLU", "relu", "relu", "nn.ReLU", {"torch.relu", "F.relu"}, Range::kNonNegative, nullptr},
      {"torch.nn.LeakyReLU",
       "LeakyReLU",
       "leaky_relu",
       "leaky_relu",
       "nn.LeakyReLU",
       {"F.leaky_relu"},
       Range::kKeep,
       [](Rng& r) {
         return pick_kw(r, "negative_slope", {0.01, 0.05, 0.1, 0.2});
       }},
      {"torch.nn.Sigmoid", "Sigmoid", "sigmoid", "sigmoid", "nn.Sigmoid", {"torch.sigmoid"}, Range::kPositive, nullptr},
      {"torch.nn.Tanh", "Tanh", "tanh", "tanh", "nn.Tanh", {"torch.tanh"}, Range::kKeepNonNegative, nullptr},
      {"torch.nn.GELU",
       "GELU",
       "gelu",
       "gelu",
       "nn.GELU",
       {"F.gelu"},
       Range::kReal,
       [](Rng& r) { return r.chance(0.3) ? std::string("approximate='tanh'") : std::string(); }},
      {"torch.nn.SELU", "SELU", "selu", "selu", "nn.SELU", {"torch.selu", "F.selu"}, Range::kReal, nullptr},
      {"torch.nn.ELU",
       "ELU",
       "elu",
       "elu",
       "nn.ELU",
       {"F.elu"},
       Range::kReal,
       [](Rng& r) {
         return pick_kw(r, "alpha", {0.5, 1.0, 1.5});
       }},
      {"torch.nn.Hardsigmoid",
       "Hardsigmoid",
       "hardsigmoid",
       "hardsigmoid",
       "nn.Hardsigmoid",
       {"F.hardsigmoid"},
       Range::kNonNegative,
       nullptr},
      {"torch.nn.Hardswish",
       "Hardswish",
       "hardswish",
       "hardswish",
       "nn.Hardswish",
       {"F.hardswish"},
       Range::kReal,
       nullptr},
      {"torch.nn.Hardtanh",
       "Hardtanh",
       "hardtanh",
       "hardtanh",
       "nn.Hardtanh",
       {"F.hardtanh"},
       Range::kReal,
       [](Rng& r) {
         double lo = r.pick(std::vector<double>{-1.0, -0.5, -2.0});
         double hi = r.pick(std::vector<double>{0.5, 1.0, 2.0});
         return "min_val=" + float_literal(lo) + ", max_val=" + float_literal(hi);
       }},
      {"torch.nn.ReLU6", "ReLU6", "hardtanh", "relu6", "nn.ReLU6", {"F.relu6"}, Range::kNonNegative, nullptr},
      {"torch.nn.Softplus",
       "Softplus",
       "softplus",
       "softplus",
       "nn.Softplus",
       {"F.softplus"},
       Range::kPositive,
       [](Rng& r) {
         return r.chance(0.5) ? pick_kw(r, "beta", {0.5, 2.0}) : std::string();
       }},
      {"torch.nn.Softsign", "Softsign", "softsign", "softsign", "nn.Softsign", {"F.softsign"}, Range::kKeep, nullptr},
      {"torch.nn.Mish", "Mish", "mish", "mish", "nn.Mish", {"F.mish"}, Range::kReal, nullptr},
      {"torch.nn.SiLU", "SiLU", "silu", "silu", "nn.SiLU", {"F.silu"}, Range::kReal, nullptr},
  };
  for (const auto& a : table) ops.push_back(make(a));
}

}  // namespace kforge::synth
