// Seed library: linear maps (nn.Linear, matmul with a weight or a second input, bmm, einsum).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

constexpr int64_t kMaxWeightElements = int64_t{1} << 26;  // 256 MB of fp32 weights
constexpr int64_t kMaxSampleElements = int64_t{1} << 22;

bool float_with_features(const TensorState& t) {
  return t.floating && t.rank() >= 2 && t.layout != Layout::kFlat;
}

// An output width for a map from `in` features applied to `rows` rows per sample, or 0 if none fits.
int64_t draw_width(Rng& rng, int64_t in, int64_t rows) {
  std::vector<int64_t> fits;
  for (int64_t w : {64, 128, 256, 384, 512, 768, 1024, 2048, 4096, 8192}) {
    if (w * in <= kMaxWeightElements && w * rows <= kMaxSampleElements) fits.push_back(w);
  }
  return fits.empty() ? 0 : rng.pick(fits);
}

TensorState with_last(const TensorState& in, int64_t width, const std::string& name) {
  TensorState out = in;
  out.dims.back() = width;
  out.names.back() = name;
  out.domain = Domain::kReal;
  return out;
}

double flops(const TensorState& in, int64_t width) {
  return 2.0 * static_cast<double>(in.sample_numel()) * static_cast<double>(width);
}

SeedOp linear_op(const char* name, const char* short_name, std::vector<std::string> registry, Instantiate inst,
                 std::function<bool(const TensorState&)> accepts = float_with_features,
                 std::vector<StartShape> starts = {{Layout::kFeatures, 2}, {Layout::kSequence, 3}}) {
  SeedOp op;
  op.name = name;
  op.short_name = short_name;
  op.category = Category::kLinear;
  op.registry_ops = std::move(registry);
  op.starts = std::move(starts);
  op.accepts = std::move(accepts);
  op.instantiate = std::move(inst);
  return op;
}

}  // namespace

void add_linear_ops(std::vector<SeedOp>& ops) {
  ops.push_back(linear_op("torch.nn.Linear", "Linear", {"linear"},
                          [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                            const int64_t k = in.dims.back();
                            const int64_t n = draw_width(rng, k, in.sample_numel() / k);
                            if (n == 0) return std::nullopt;
                            std::string in_f = seed::size_arg(src, in, in.rank() - 1, "in_features");
                            std::string out_f = src.constant("out_features", std::to_string(n), true);
                            std::string m = src.member("linear");
                            src.init_line("self." + m + " = nn.Linear(" + in_f + ", " + out_f +
                                          (rng.chance(0.2) ? ", bias=False)" : ")"));
                            src.forward_line("x = self." + m + "(x)");
                            return Placed{with_last(in, n, out_f), flops(in, n)};
                          }));
  ops.push_back(linear_op("torch.matmul", "Matmul", {"matmul"},
                          [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                            const int64_t k = in.dims.back();
                            const int64_t n = draw_width(rng, k, in.sample_numel() / k);
                            if (n == 0) return std::nullopt;
                            if (rng.chance(0.5)) {  // a learned weight
                              std::string kk = seed::size_arg(src, in, in.rank() - 1, "k_dim");
                              std::string nn_ = src.constant("n_dim", std::to_string(n), true);
                              std::string m = src.member("weight");
                              src.init_line("self." + m + " = nn.Parameter(torch.randn(" + kk + ", " + nn_ + "))");
                              src.forward_line("x = torch.matmul(x, self." + m + ")");
                              return Placed{with_last(in, n, nn_), flops(in, n)};
                            }
                            std::string kk = seed::size_arg(src, in, in.rank() - 1, "k_dim", false);
                            std::string nn_ = src.constant("n_dim", std::to_string(n), false);
                            std::string w = src.input("w", "torch.rand(" + kk + ", " + nn_ + ")");
                            src.forward_line(rng.chance(0.5) ? "x = torch.matmul(x, " + w + ")" : "x = x @ " + w);
                            return Placed{with_last(in, n, nn_), flops(in, n)};
                          }));
  ops.push_back(linear_op(
      "torch.bmm", "Bmm", {"matmul"},
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        const int64_t k = in.dims.back();
        const int64_t n = draw_width(rng, k, in.dims[0]);
        if (n == 0 || n * k > kMaxSampleElements) return std::nullopt;
        std::string kk = seed::size_arg(src, in, 2, "k_dim", false);
        std::string nn_ = src.constant("n_dim", std::to_string(n), false);
        std::string y = src.input("y", "torch.rand(batch_size, " + kk + ", " + nn_ + ")");
        src.forward_line("x = torch.bmm(x, " + y + ")");
        return Placed{with_last(in, n, nn_), flops(in, n)};
      },
      [](const TensorState& t) { return t.floating && t.rank() == 3 && t.layout != Layout::kChannels; },
      {{Layout::kSequence, 3}}));
  ops.push_back(linear_op("torch.einsum", "Einsum", {"einsum"},
                          [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                            const int64_t k = in.dims.back();
                            const int64_t n = draw_width(rng, k, in.sample_numel() / k);
                            if (n == 0 || in.rank() > 5) return std::nullopt;
                            const std::string letters = "bhsdt";
                            std::string lhs = letters.substr(0, static_cast<size_t>(in.rank() - 1));
                            std::string eq = lhs + "k,kn->" + lhs + "n";
                            std::string kk = seed::size_arg(src, in, in.rank() - 1, "k_dim");
                            std::string nn_ = src.constant("n_dim", std::to_string(n), true);
                            std::string m = src.member("weight");
                            src.init_line("self." + m + " = nn.Parameter(torch.randn(" + kk + ", " + nn_ + "))");
                            src.forward_line("x = torch.einsum(\"" + eq + "\", x, self." + m + ")");
                            return Placed{with_last(in, n, nn_), flops(in, n)};
                          }));
}

}  // namespace kforge::synth
