// Seed library: losses, always with reduction='none' so that the task keeps its batch dimension
// (an output averaged over a whole H200-sized batch hardly changes between input sets: the
// anti-hacking filter would reject it, and a scaled-down CPU run could not see that).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

SeedOp loss_op(std::string name, std::string short_name, std::vector<std::string> registry,
               std::vector<StartShape> starts, std::function<bool(const TensorState&)> accepts, Instantiate inst) {
  SeedOp op;
  op.name = std::move(name);
  op.short_name = std::move(short_name);
  op.category = Category::kLoss;
  op.registry_ops = std::move(registry);
  op.starts = std::move(starts);
  op.accepts = [accepts](const TensorState& t) { return t.floating && accepts(t); };
  op.instantiate = std::move(inst);
  return op;
}

// A pointwise loss against a `target` input of the same shape.
SeedOp pointwise(const std::string& cls, const std::string& fn, const std::string& registry,
                 std::function<std::string(Rng&)> extra, Domain domain, const std::string& target_make = "torch.rand") {
  return loss_op(
      "torch.nn." + cls, cls, {registry}, seed::any_start(), [](const TensorState&) { return true; },
      [=](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string kw = "reduction='none'" + (extra ? extra(rng) : std::string());
        std::string target = src.input("target", target_make + "(" + in.shape_args() + ")");
        if (rng.chance(0.5)) {
          std::string m = src.member("loss");
          src.init_line("self." + m + " = nn." + cls + "(" + kw + ")");
          src.forward_line("x = self." + m + "(x, " + target + ")");
        } else {
          src.forward_line("x = F." + fn + "(x, " + target + ", " + kw + ")");
        }
        Placed p{in, 4.0 * static_cast<double>(in.sample_numel())};
        p.out.domain = domain;
        return p;
      });
}

}  // namespace

void add_loss_ops(std::vector<SeedOp>& ops) {
  ops.push_back(pointwise("MSELoss", "mse_loss", "mse_loss", nullptr, Domain::kNonNegative));
  ops.push_back(pointwise("L1Loss", "l1_loss", "l1_loss", nullptr, Domain::kNonNegative));
  ops.push_back(pointwise(
      "SmoothL1Loss", "smooth_l1_loss", "smooth_l1_loss",
      [](Rng& r) {
        return r.chance(0.5) ? ", beta=" + seed::float_literal(r.pick(std::vector<double>{0.5, 2.0})) : "";
      },
      Domain::kNonNegative));
  ops.push_back(pointwise(
      "HuberLoss", "huber_loss", "huber_loss",
      [](Rng& r) {
        return r.chance(0.5) ? ", delta=" + seed::float_literal(r.pick(std::vector<double>{0.5, 2.0})) : "";
      },
      Domain::kNonNegative));
  // The target as log-probabilities (log_target=True): torch.rand targets would make log(0) = -inf.
  ops.push_back(pointwise(
      "KLDivLoss", "kl_div", "kl_div", [](Rng&) { return std::string(", log_target=True"); }, Domain::kReal));

  // Logits (batch, classes) only: torch 1.13 has no meta kernel for the (batch, classes, d...) form,
  // so the importer could not trace it.
  ops.push_back(loss_op(
      "torch.nn.CrossEntropyLoss", "CrossEntropyLoss", {"cross_entropy"}, {{Layout::kFeatures, 2}},
      [](const TensorState& t) { return t.rank() == 2 && t.dims[0] >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string classes = seed::size_arg(src, in, 1, "num_classes", false);
        std::string target = src.input("target", "torch.randint(0, " + classes + ", (batch_size,))");
        std::string kw = "reduction='none'";
        if (rng.chance(0.3)) kw += ", label_smoothing=0.1";
        if (rng.chance(0.5)) {
          std::string m = src.member("loss");
          src.init_line("self." + m + " = nn.CrossEntropyLoss(" + kw + ")");
          src.forward_line("x = self." + m + "(x, " + target + ")");
        } else {
          src.forward_line("x = F.cross_entropy(x, " + target + ", " + kw + ")");
        }
        Placed p{seed::drop_dim(in, 1), 6.0 * static_cast<double>(in.sample_numel())};
        p.out.domain = Domain::kNonNegative;
        return p;
      }));

  ops.push_back(loss_op(
      "torch.nn.TripletMarginLoss", "TripletMarginLoss", {"triplet_margin_loss"}, {{Layout::kFeatures, 2}},
      [](const TensorState& t) { return t.layout == Layout::kFeatures && t.rank() == 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string positive = src.input("positive", "torch.rand(" + in.shape_args() + ")");
        std::string negative = src.input("negative", "torch.rand(" + in.shape_args() + ")");
        std::string margin =
            src.constant("margin", seed::float_literal(rng.pick(std::vector<double>{0.5, 1.0, 2.0})), true);
        std::string m = src.member("loss");
        src.init_line("self." + m + " = nn.TripletMarginLoss(margin=" + margin + ", reduction='none')");
        src.forward_line("x = self." + m + "(x, " + positive + ", " + negative + ")");
        Placed p{seed::drop_dim(in, 1), 8.0 * static_cast<double>(in.sample_numel())};
        p.out.domain = Domain::kNonNegative;
        return p;
      }));
}

}  // namespace kforge::synth
