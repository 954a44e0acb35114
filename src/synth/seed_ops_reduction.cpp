// Seed library: reductions over one non-batch dim (sum, mean, max, min, prod, logsumexp, norm, var,
// std, argmax, argmin), softmax and log-softmax, and the scans cumsum and cumprod.
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

bool reducible(const TensorState& t) {
  return t.floating && t.rank() >= 2;
}

SeedOp op_of(std::string name, std::string short_name, Category cat, std::vector<std::string> registry,
             std::function<bool(const TensorState&)> accepts, Instantiate inst) {
  SeedOp op;
  op.name = std::move(name);
  op.short_name = std::move(short_name);
  op.category = cat;
  op.registry_ops = std::move(registry);
  op.starts = seed::any_start();
  op.accepts = std::move(accepts);
  op.instantiate = std::move(inst);
  return op;
}

// The state after reducing dim d, with or without keepdim.
TensorState reduced(const TensorState& in, int d, bool keepdim) {
  if (!keepdim) return seed::drop_dim(in, d);
  TensorState out = in;
  out.dims[static_cast<size_t>(d - 1)] = 1;
  out.names[static_cast<size_t>(d - 1)] = "";
  return out;
}

// A reduction written as one of `forms`, where DIM and KEEP are replaced by the drawn arguments
// ("torch.sum(x, dim=DIM KEEP)", "x.sum(DIM KEEP)").
Instantiate reduction(std::vector<std::string> forms, std::function<Domain(Domain)> domain, int64_t max_extent,
                      bool allow_keepdim = true) {
  return [=](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    std::vector<int> dims;
    for (int d = 1; d < in.rank(); ++d) {
      int64_t n = in.dims[static_cast<size_t>(d - 1)];
      if (n >= 2 && n <= max_extent) dims.push_back(d);
    }
    if (dims.empty()) return std::nullopt;
    int d = rng.pick(dims);
    bool keepdim = allow_keepdim && rng.chance(0.4);
    std::string f = rng.pick(forms);
    std::string dim_text = seed::dim_literal(in, d, rng);
    auto put = [&](const std::string& key, const std::string& value) {
      auto pos = f.find(key);
      if (pos != std::string::npos) f.replace(pos, key.size(), value);
    };
    put("DIM", dim_text);
    put(" KEEP", keepdim ? ", keepdim=True" : "");
    src.forward_line("x = " + f);
    Placed p{reduced(in, d, keepdim), 2.0 * static_cast<double>(in.sample_numel())};
    p.out.domain = domain(in.domain);
    return p;
  };
}

// Softmax-like and scans: same shape, along one dim.
Instantiate along_dim(std::vector<std::string> forms, std::function<Domain(Domain)> domain, int64_t max_extent,
                      const std::string& module = "", const std::string& member = "") {
  return [=](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    std::vector<int> dims;
    for (int d = 1; d < in.rank(); ++d) {
      int64_t n = in.dims[static_cast<size_t>(d - 1)];
      if (n >= 2 && n <= max_extent) dims.push_back(d);
    }
    if (dims.empty()) return std::nullopt;
    int d = rng.pick(dims);
    std::string dim_text = seed::dim_literal(in, d, rng);
    std::string f = rng.pick(forms);
    f.replace(f.find("DIM"), 3, dim_text);
    std::string mod = module.empty() ? "" : module + "(dim=" + dim_text + ")";
    seed::module_or_call(src, rng, member, mod, f);
    Placed p{in, 4.0 * static_cast<double>(in.sample_numel())};
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

constexpr int64_t kAny = int64_t{1} << 40;

}  // namespace

void add_reduction_ops(std::vector<SeedOp>& ops) {
  const auto R = Category::kReduction;
  ops.push_back(op_of("torch.sum", "Sum", R, {"sum"}, reducible,
                      reduction({"torch.sum(x, dim=DIM KEEP)", "x.sum(dim=DIM KEEP)"}, keep, kAny)));
  ops.push_back(op_of("torch.mean", "Mean", R, {"mean"}, reducible,
                      reduction({"torch.mean(x, dim=DIM KEEP)", "x.mean(dim=DIM KEEP)"}, keep, kAny)));
  ops.push_back(op_of("torch.max", "Max", R, {"amax"}, reducible,
                      reduction({"torch.max(x, dim=DIM KEEP)[0]", "torch.amax(x, dim=DIM KEEP)"}, keep, kAny)));
  ops.push_back(op_of("torch.min", "Min", R, {"amin"}, reducible,
                      reduction({"torch.min(x, dim=DIM KEEP)[0]", "torch.amin(x, dim=DIM KEEP)"}, keep, kAny)));
  ops.push_back(
      op_of("torch.prod", "Prod", R, {"prod"}, reducible, reduction({"torch.prod(x, dim=DIM KEEP)"}, keep, 16)));
  ops.push_back(op_of("torch.logsumexp", "LogSumExp", R, {"logsumexp"}, reducible,
                      reduction({"torch.logsumexp(x, dim=DIM KEEP)"}, real, kAny)));
  ops.push_back(
      op_of("torch.norm", "Norm", R, {"norm"}, reducible,
            reduction({"torch.norm(x, dim=DIM KEEP)", "torch.linalg.vector_norm(x, dim=DIM KEEP)"}, nonneg, kAny)));
  ops.push_back(op_of("torch.var", "Var", R, {"var"}, reducible,
                      reduction({"torch.var(x, dim=DIM KEEP)", "x.var(dim=DIM KEEP)"}, nonneg, kAny)));
  ops.push_back(op_of("torch.std", "Std", R, {"var", "sqrt"}, reducible,
                      reduction({"torch.std(x, dim=DIM KEEP)", "x.std(dim=DIM KEEP)"}, nonneg, kAny)));
  for (const char* which : {"argmax", "argmin"}) {
    SeedOp op = op_of(std::string("torch.") + which, which == std::string("argmax") ? "Argmax" : "Argmin", R, {which},
                      reducible, reduction({std::string("torch.") + which + "(x, dim=DIM KEEP)"}, keep, kAny));
    Instantiate base = op.instantiate;
    op.instantiate = [base](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
      auto p = base(in, rng, src);
      if (p) p->out.floating = false;
      return p;
    };
    op.terminal = true;
    ops.push_back(op);
  }
  const auto A = Category::kActivation;
  ops.push_back(op_of(
      "torch.nn.Softmax", "Softmax", A, {"softmax"}, reducible,
      along_dim({"torch.softmax(x, dim=DIM)", "F.softmax(x, dim=DIM)"}, positive, kAny, "nn.Softmax", "softmax")));
  ops.push_back(op_of("torch.nn.LogSoftmax", "LogSoftmax", A, {"log_softmax"}, reducible,
                      along_dim({"torch.log_softmax(x, dim=DIM)", "F.log_softmax(x, dim=DIM)"}, real, kAny,
                                "nn.LogSoftmax", "log_softmax")));
  const auto S = Category::kScan;
  ops.push_back(op_of("torch.cumsum", "Cumsum", S, {"cumsum"}, reducible,
                      along_dim({"torch.cumsum(x, dim=DIM)", "x.cumsum(dim=DIM)"}, keep, kAny)));
  ops.push_back(
      op_of("torch.cumprod", "Cumprod", S, {"cumprod"}, reducible, along_dim({"torch.cumprod(x, dim=DIM)"}, keep, 64)));
}

}  // namespace kforge::synth
