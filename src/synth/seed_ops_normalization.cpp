// Seed library: normalizations (BatchNorm, InstanceNorm, GroupNorm, LayerNorm, F.normalize).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

constexpr int64_t kMaxNormalizedElements = int64_t{1} << 20;

SeedOp norm_op(std::string name, std::string short_name, std::vector<std::string> registry,
               std::vector<StartShape> starts, std::function<bool(const TensorState&)> accepts, Instantiate inst) {
  SeedOp op;
  op.name = std::move(name);
  op.short_name = std::move(short_name);
  op.category = Category::kNormalization;
  op.registry_ops = std::move(registry);
  op.starts = std::move(starts);
  op.accepts = [accepts](const TensorState& t) { return t.floating && accepts(t); };
  op.instantiate = std::move(inst);
  return op;
}

Placed normalized(const TensorState& in, double per_element = 8) {
  Placed p{in, per_element * static_cast<double>(in.sample_numel())};
  p.out.domain = Domain::kReal;
  return p;
}

std::string eps_kw(Rng& rng) {
  return rng.chance(0.2) ? ", eps=" + seed::float_literal(rng.pick(std::vector<double>{1e-6, 1e-3})) : "";
}

SeedOp batch_norm(int sd) {
  std::string n = std::to_string(sd);
  std::vector<StartShape> starts = {{Layout::kChannels, sd + 2}};
  if (sd == 1) starts.push_back({Layout::kFeatures, 2});
  return norm_op(
      "torch.nn.BatchNorm" + n + "d", "BatchNorm" + n + "d", {"batch_norm"}, starts,
      [sd](const TensorState& t) {
        return (t.layout == Layout::kChannels && t.rank() == sd + 2) ||
               (sd == 1 && t.layout == Layout::kFeatures && t.rank() == 2);
      },
      [n](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string c = seed::size_arg(src, in, 1, in.layout == Layout::kFeatures ? "num_features" : "out_channels");
        std::string kw = eps_kw(rng);
        if (rng.chance(0.2)) kw += ", momentum=" + seed::float_literal(rng.pick(std::vector<double>{0.01, 0.05}));
        std::string m = src.member("batch_norm");
        src.init_line("self." + m + " = nn.BatchNorm" + n + "d(" + c + kw + ")");
        src.forward_line("x = self." + m + "(x)");
        return normalized(in, 2);
      });
}

SeedOp instance_norm(int sd) {
  std::string n = std::to_string(sd);
  return norm_op(
      "torch.nn.InstanceNorm" + n + "d", "InstanceNorm" + n + "d", {"instance_norm"}, {{Layout::kChannels, sd + 2}},
      [sd](const TensorState& t) {
        return t.layout == Layout::kChannels && t.rank() == sd + 2 && t.sample_numel() / t.dims[0] > 1;
      },
      [n](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        bool affine = rng.chance(0.4);
        std::string kw = eps_kw(rng) + (affine ? ", affine=True" : "");
        if (affine || rng.chance(0.5)) {
          std::string c = seed::size_arg(src, in, 1, "out_channels");
          std::string m = src.member("instance_norm");
          src.init_line("self." + m + " = nn.InstanceNorm" + n + "d(" + c + kw + ")");
          src.forward_line("x = self." + m + "(x)");
        } else {
          src.forward_line("x = F.instance_norm(x" + kw + ")");
        }
        return normalized(in);
      });
}

}  // namespace

void add_normalization_ops(std::vector<SeedOp>& ops) {
  for (int sd = 1; sd <= 3; ++sd) ops.push_back(batch_norm(sd));
  for (int sd = 1; sd <= 3; ++sd) ops.push_back(instance_norm(sd));
  ops.push_back(norm_op(
      "torch.nn.GroupNorm", "GroupNorm", {"group_norm"},
      {{Layout::kChannels, 3}, {Layout::kChannels, 4}, {Layout::kChannels, 5}},
      [](const TensorState& t) { return t.layout == Layout::kChannels && t.dims[0] >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::vector<int64_t> gs;  // groups that divide the channels and hold more than one value each
        const int64_t per_channel = in.sample_numel() / in.dims[0];
        for (int64_t g : {2, 4, 8, 16, 32}) {
          if (in.dims[0] % g == 0 && (in.dims[0] / g) * per_channel >= 2) gs.push_back(g);
        }
        if (gs.empty()) return std::nullopt;
        std::string groups = src.constant("num_groups", std::to_string(rng.pick(gs)), true);
        std::string c = seed::size_arg(src, in, 1, "out_channels");
        std::string kw = eps_kw(rng);
        seed::module_or_call(src, rng, "group_norm", "nn.GroupNorm(" + groups + ", " + c + kw + ")", "");
        return normalized(in);
      }));
  ops.push_back(norm_op(
      "torch.nn.LayerNorm", "LayerNorm", {"layer_norm"}, seed::any_start(),
      [](const TensorState& t) { return t.rank() >= 2 && t.dims.back() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        int k = 1;  // normalize over the last k dims
        if (in.rank() >= 3 && rng.chance(0.3)) k = static_cast<int>(rng.uniform_int(2, std::min(3, in.rank() - 1)));
        int64_t count = 1;
        std::string shape = "(";
        for (int d = in.rank() - k; d < in.rank(); ++d) {
          count *= in.dims[static_cast<size_t>(d - 1)];
          shape += in.size_expr(d) + (k == 1 ? ",)" : (d + 1 < in.rank() ? ", " : ")"));
        }
        if (count > kMaxNormalizedElements) return std::nullopt;
        std::string ns = src.constant("normalized_shape", shape, true);
        std::string kw = eps_kw(rng);
        if (rng.chance(0.7)) {
          std::string m = src.member("layer_norm");
          src.init_line("self." + m + " = nn.LayerNorm(" + ns + kw + ")");
          src.forward_line("x = self." + m + "(x)");
        } else {
          std::string m = src.member("normalized_shape");
          src.init_line("self." + m + " = " + ns);
          src.forward_line("x = F.layer_norm(x, self." + m + kw + ")");
        }
        return normalized(in);
      }));
  ops.push_back(norm_op(
      "torch.nn.functional.normalize", "Normalize", {"norm", "clamp", "div"}, seed::any_start(),
      [](const TensorState& t) { return t.rank() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        int d = seed::draw_dim(in, rng);
        std::string p = rng.chance(0.8) ? "" : "p=1.0, ";
        src.forward_line("x = F.normalize(x, " + p + "dim=" + seed::dim_literal(in, d, rng) + ")");
        return normalized(in, 4);
      }));
}

}  // namespace kforge::synth
