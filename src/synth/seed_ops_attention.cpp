// Seed library: attention pieces: scaled-dot-product attention and the score matrix x @ x^T.
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

constexpr int64_t kMaxScoreElements = int64_t{1} << 23;  // (heads, seq, seq) per sample

bool attention_shaped(const TensorState& t) {
  return t.floating &&
         ((t.layout == Layout::kHeads && t.rank() == 4) || (t.layout == Layout::kSequence && t.rank() == 3));
}

int64_t score_elements(const TensorState& t) {
  const int64_t s = t.dims[t.dims.size() - 2];
  return t.sample_numel() / t.dims.back() * s;
}

}  // namespace

void add_attention_ops(std::vector<SeedOp>& ops) {
  SeedOp sdpa;
  sdpa.name = "torch.nn.functional.scaled_dot_product_attention";
  sdpa.short_name = "SDPA";
  sdpa.category = Category::kAttention;
  sdpa.registry_ops = {"scaled_dot_product_attention"};
  sdpa.starts = {{Layout::kHeads, 4}, {Layout::kSequence, 3}};
  sdpa.accepts = attention_shaped;
  sdpa.instantiate = [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    if (score_elements(in) > kMaxScoreElements) return std::nullopt;
    std::string causal = rng.chance(0.4) ? ", is_causal=True" : "";
    if (rng.chance(0.5)) {  // self-attention: queries, keys and values are x
      src.forward_line("x = F.scaled_dot_product_attention(x, x, x" + causal + ")");
    } else {  // keys and values from other inputs
      std::string k = src.input("k", "torch.rand(" + in.shape_args() + ")");
      std::string v = src.input("v", "torch.rand(" + in.shape_args() + ")");
      src.forward_line("x = F.scaled_dot_product_attention(x, " + k + ", " + v + causal + ")");
    }
    Placed p{in, 4.0 * static_cast<double>(score_elements(in)) * static_cast<double>(in.dims.back())};
    p.out.domain = in.domain == Domain::kReal ? Domain::kReal : Domain::kNonNegative;
    return p;
  };
  ops.push_back(sdpa);

  SeedOp scores;
  scores.name = "torch.matmul (x @ x^T)";
  scores.short_name = "Gram";
  scores.category = Category::kAttention;
  scores.registry_ops = {"permute", "matmul"};
  scores.starts = {{Layout::kHeads, 4}, {Layout::kSequence, 3}};
  scores.accepts = attention_shaped;
  scores.instantiate = [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
    if (score_elements(in) > kMaxScoreElements) return std::nullopt;
    src.forward_line(rng.chance(0.5) ? "x = torch.matmul(x, x.transpose(-2, -1))" : "x = x @ x.transpose(-1, -2)");
    TensorState out = in;
    out.dims.back() = in.dims[in.dims.size() - 2];
    out.names.back() = in.names[in.names.size() - 2];
    out.domain = in.domain == Domain::kReal ? Domain::kReal : Domain::kNonNegative;
    return Placed{out, 2.0 * static_cast<double>(score_elements(in)) * static_cast<double>(in.dims.back())};
  };
  ops.push_back(scores);
}

}  // namespace kforge::synth
