// Seed library: elementwise math (torch functions on one tensor, or with a scalar or a broadcast
// parameter as the other operand).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

using seed::float_literal;

double numel(const TensorState& t) {
  return static_cast<double>(t.sample_numel());
}

SeedOp elementwise(const char* name, const char* short_name, std::vector<std::string> registry,
                   std::function<bool(const TensorState&)> accepts, Instantiate inst) {
  SeedOp op;
  op.name = name;
  op.short_name = short_name;
  op.category = Category::kElementwise;
  op.registry_ops = std::move(registry);
  op.starts = seed::any_start();
  op.accepts = [accepts](const TensorState& t) { return t.floating && (!accepts || accepts(t)); };
  op.instantiate = std::move(inst);
  return op;
}

// A unary function: `x = fn(x)` in one of its spellings, with the domain it leaves.
Instantiate unary(std::vector<std::string> spellings, std::function<Domain(Domain)> domain) {
  return [spellings, domain](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    src.forward_line("x = " + rng.pick(spellings));
    Placed p{in, numel(in)};
    p.out.domain = domain(in.domain);
    return p;
  };
}

// The shape of a parameter that broadcasts against `t`: per channel (C, 1, ...) or per feature.
std::string broadcast_shape(const TensorState& t) {
  if (t.layout == Layout::kChannels) {
    std::string s = "(" + t.size_expr(1);
    for (int d = 2; d < t.rank(); ++d) s += ", 1";
    return s + (t.rank() == 2 ? ",)" : ")");
  }
  return "(" + t.size_expr(t.rank() - 1) + ",)";
}

bool has_dims(const TensorState& t) {
  return t.rank() >= 2;
}

// `x = x <op> self.<param>` with a broadcast parameter made from torch.randn in __init__.
Instantiate with_parameter(const std::string& base, std::function<std::string(const std::string&)> expr) {
  return [base, expr](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    std::string shape = src.constant(base + "_shape", broadcast_shape(in), true);
    std::string m = src.member(base);
    src.init_line("self." + m + " = nn.Parameter(torch.randn(" + shape + "))");
    src.forward_line("x = " + expr("self." + m));
    Placed p{in, numel(in)};
    p.out.domain = Domain::kReal;
    return p;
  };
}

// `x = x <op> self.<constant>` with a scalar constructor argument.
Instantiate with_scalar(const std::string& base, const std::vector<double>& values, const std::string& pyop,
                        std::function<Domain(Domain)> domain) {
  return [=](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    std::string c = src.constant(base, float_literal(rng.pick(values)), true);
    std::string m = src.member(base);
    src.init_line("self." + m + " = " + c);
    src.forward_line("x = x " + pyop + " self." + m);
    Placed p{in, numel(in)};
    p.out.domain = domain(in.domain);
    return p;
  };
}

Domain keep(Domain d) {
  return d;
}
Domain real(Domain) {
  return Domain::kReal;
}
Domain nonneg(Domain) {
  return Domain::kNonNegative;
}
Domain positive(Domain) {
  return Domain::kPositive;
}
bool nonneg_in(const TensorState& t) {
  return t.domain != Domain::kReal;
}
bool real_in(const TensorState& t) {
  return t.domain == Domain::kReal;
}

}  // namespace

void add_elementwise_ops(std::vector<SeedOp>& ops) {
  ops.push_back(elementwise("torch.exp", "Exp", {"exp"}, nullptr, unary({"torch.exp(x)", "x.exp()"}, positive)));
  // On values that may be 0, log(1 + x) (finite); on positive values, log(x).
  ops.push_back(elementwise("torch.log", "Log", {"log", "add"}, nonneg_in,
                            [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                              if (in.domain == Domain::kPositive) {
                                src.forward_line(rng.chance(0.5) ? "x = torch.log(x)" : "x = x.log()");
                              } else {
                                src.forward_line("x = torch.log(x + 1.0)");
                              }
                              Placed p{in, numel(in)};
                              p.out.domain = in.domain == Domain::kPositive ? Domain::kReal : Domain::kNonNegative;
                              return p;
                            }));
  ops.push_back(elementwise("torch.abs", "Abs", {"abs"}, real_in, unary({"torch.abs(x)", "x.abs()"}, nonneg)));
  ops.push_back(elementwise("torch.neg", "Neg", {"neg"}, nullptr, unary({"torch.neg(x)", "-x"}, real)));
  ops.push_back(elementwise("torch.sqrt", "Sqrt", {"sqrt"}, nonneg_in, unary({"torch.sqrt(x)"}, nonneg)));
  // On values that may be 0, shifted away from it (rsqrt(x + eps), 1 / (x + 1)), as models write them.
  ops.push_back(elementwise("torch.rsqrt", "Rsqrt", {"rsqrt", "add"}, nonneg_in,
                            [](const TensorState& in, Rng&, TaskSource& src) -> std::optional<Placed> {
                              src.forward_line(in.domain == Domain::kPositive ? "x = torch.rsqrt(x)"
                                                                              : "x = torch.rsqrt(x + 1e-05)");
                              Placed p{in, numel(in)};
                              p.out.domain = Domain::kPositive;
                              return p;
                            }));
  ops.push_back(elementwise("torch.reciprocal", "Reciprocal", {"reciprocal", "div", "add"}, nonneg_in,
                            [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                              if (in.domain == Domain::kPositive) {
                                src.forward_line(rng.chance(0.5) ? "x = torch.reciprocal(x)" : "x = 1.0 / x");
                              } else {
                                src.forward_line("x = torch.reciprocal(x + 1.0)");
                              }
                              Placed p{in, numel(in)};
                              p.out.domain = Domain::kPositive;
                              return p;
                            }));
  ops.push_back(elementwise("torch.erf", "Erf", {"erf"}, nullptr, unary({"torch.erf(x)"}, keep)));
  ops.push_back(elementwise("torch.sign", "Sign", {"sign"}, real_in, unary({"torch.sign(x)"}, real)));
  ops.push_back(elementwise("torch.pow", "Pow", {"pow_scalar"}, nullptr,
                            [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                              std::vector<std::string> exps = {"2", "2.0", "3"};
                              if (in.domain != Domain::kReal) exps.push_back("0.5");
                              std::string e = rng.pick(exps);
                              src.forward_line(rng.chance(0.5) ? "x = torch.pow(x, " + e + ")" : "x = x ** " + e);
                              Placed p{in, numel(in)};
                              p.out.domain = e == "3" ? in.domain : Domain::kNonNegative;
                              return p;
                            }));
  ops.push_back(elementwise("torch.clamp", "Clamp", {"clamp"}, nullptr,
                            [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                              double lo = rng.pick(std::vector<double>{-1.0, -0.5, 0.0, 0.1});
                              double hi = rng.pick(std::vector<double>{0.5, 0.8, 1.0, 2.0});
                              std::string lo_c = src.constant("clamp_min", float_literal(lo), true);
                              std::string hi_c = src.constant("clamp_max", float_literal(hi), true);
                              std::string m_lo = src.member("clamp_min");
                              std::string m_hi = src.member("clamp_max");
                              src.init_line("self." + m_lo + " = " + lo_c);
                              src.init_line("self." + m_hi + " = " + hi_c);
                              src.forward_line("x = torch.clamp(x, min=self." + m_lo + ", max=self." + m_hi + ")");
                              Placed p{in, numel(in)};
                              p.out.domain =
                                  lo > 0 ? Domain::kPositive : (lo == 0 ? Domain::kNonNegative : Domain::kReal);
                              return p;
                            }));
  ops.push_back(elementwise("torch.mul", "Scale", {"mul"}, nullptr,
                            with_scalar("scaling_factor", {0.5, 1.5, 2.0, 2.5}, "*", keep)));
  ops.push_back(
      elementwise("torch.div", "Divide", {"div"}, nullptr, with_scalar("divisor", {2.0, 3.0, 4.0, 0.5}, "/", keep)));
  ops.push_back(elementwise("torch.sub", "Subtract", {"sub"}, nullptr,
                            with_scalar("subtract_value", {0.5, 0.2, 1.0}, "-", real)));
  ops.push_back(elementwise("torch.add", "BiasAdd", {"add"}, has_dims,
                            with_parameter("bias", [](const std::string& p) { return "x + " + p; })));
  ops.push_back(
      elementwise("torch.maximum", "Maximum", {"maximum"}, has_dims,
                  with_parameter("floor", [](const std::string& p) { return "torch.maximum(x, " + p + ")"; })));
  ops.push_back(
      elementwise("torch.minimum", "Minimum", {"minimum"}, has_dims,
                  with_parameter("ceiling", [](const std::string& p) { return "torch.minimum(x, " + p + ")"; })));
  ops.push_back(elementwise(
      "torch.pow (tensor exponent)", "PowParam", {"pow"},
      [](const TensorState& t) { return nonneg_in(t) && t.rank() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string shape = src.constant("exponent_shape", broadcast_shape(in), true);
        std::string m = src.member("exponent");
        src.init_line("self." + m + " = nn.Parameter(torch.rand(" + shape + ") + 0.5)");
        src.forward_line("x = torch.pow(x, self." + m + ")");
        Placed p{in, numel(in)};
        p.out.domain = Domain::kNonNegative;
        return p;
      }));
  ops.push_back(elementwise(
      "torch.where", "Where", {"where", "gt", "lt", "ge", "le", "mul"}, nullptr,
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::string cmp = rng.pick(std::vector<std::string>{">", "<", ">=", "<="});
        double t = rng.pick(in.domain == Domain::kReal ? std::vector<double>{0.0, 0.5, -0.5}
                                                       : std::vector<double>{0.25, 0.5, 0.75});
        std::string th = src.constant("threshold", float_literal(t), true);
        std::string sc =
            src.constant("negative_scale", float_literal(rng.pick(std::vector<double>{0.1, 0.2, 0.5})), true);
        std::string m_th = src.member("threshold");
        std::string m_sc = src.member("negative_scale");
        src.init_line("self." + m_th + " = " + th);
        src.init_line("self." + m_sc + " = " + sc);
        src.forward_line("x = torch.where(x " + cmp + " self." + m_th + ", x, x * self." + m_sc + ")");
        Placed p{in, 2.0 * numel(in)};
        return p;
      }));
}

}  // namespace kforge::synth
