// Seed library: layout and data movement (flatten, transpose, permute, slicing, select, flip, cat,
// stack, tril/triu).
#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

constexpr int64_t kMaxSampleElements = int64_t{1} << 22;

SeedOp layout_op(std::string name, std::string short_name, std::vector<std::string> registry,
                 std::function<bool(const TensorState&)> accepts, Instantiate inst) {
  SeedOp op;
  op.name = std::move(name);
  op.short_name = std::move(short_name);
  op.category = Category::kLayout;
  op.registry_ops = std::move(registry);
  op.starts = {{Layout::kSequence, 3}, {Layout::kChannels, 3}, {Layout::kChannels, 4}, {Layout::kHeads, 4}};
  op.accepts = [accepts](const TensorState& t) { return t.floating && accepts(t); };
  op.instantiate = std::move(inst);
  return op;
}

bool rank3_up(const TensorState& t) {
  return t.rank() >= 3;
}

double moved(const TensorState& t) {
  return static_cast<double>(t.sample_numel());
}

// The layout after swapping dims a < b of `t`.
Layout swapped_layout(const TensorState& t, int a, int b) {
  if (t.rank() == 3 && a == 1 && b == 2) {
    if (t.layout == Layout::kSequence) return Layout::kChannels;  // (seq, features) -> (channels, length)
    if (t.layout == Layout::kChannels) return Layout::kSequence;
  }
  if (t.layout == Layout::kHeads && a == 1 && b == 2) return Layout::kGeneric;
  return Layout::kGeneric;
}

}  // namespace

void add_layout_ops(std::vector<SeedOp>& ops) {
  ops.push_back(layout_op("torch.flatten", "Flatten", {"reshape"}, rank3_up,
                          [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                            std::vector<std::string> forms = {"torch.flatten(x, 1)", "x.view(x.size(0), -1)",
                                                              "x.flatten(start_dim=1)", "x.reshape(x.shape[0], -1)"};
                            seed::module_or_call(src, rng, "flatten", "nn.Flatten()", rng.pick(forms));
                            TensorState out = unnamed({in.sample_numel()}, Layout::kFeatures, in.domain);
                            return Placed{out, 0};
                          }));
  ops.push_back(layout_op("torch.transpose", "Transpose", {"permute"}, rank3_up,
                          [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
                            int a = static_cast<int>(rng.uniform_int(1, in.rank() - 2));
                            int b = static_cast<int>(rng.uniform_int(a + 1, in.rank() - 1));
                            std::string args = std::to_string(a) + ", " + std::to_string(b);
                            src.forward_line(rng.chance(0.5) ? "x = x.transpose(" + args + ")"
                                                             : "x = torch.transpose(x, " + args + ")");
                            TensorState out = in;
                            std::swap(out.dims[static_cast<size_t>(a - 1)], out.dims[static_cast<size_t>(b - 1)]);
                            std::swap(out.names[static_cast<size_t>(a - 1)], out.names[static_cast<size_t>(b - 1)]);
                            out.layout = swapped_layout(in, a, b);
                            return Placed{out, moved(in)};
                          }));
  ops.push_back(layout_op(
      "torch.permute", "Permute", {"permute"}, [](const TensorState& t) { return t.rank() >= 4; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::vector<int> perm;
        for (int d = 1; d < in.rank(); ++d) perm.push_back(d);
        for (size_t i = perm.size(); i > 1; --i) {  // Fisher-Yates with our own draws
          size_t j = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i) - 1));
          std::swap(perm[i - 1], perm[j]);
        }
        bool identity = true;
        for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i) + 1;
        if (identity) std::swap(perm[0], perm[1]);
        std::string args = "0";
        TensorState out = in;
        for (size_t i = 0; i < perm.size(); ++i) {
          args += ", " + std::to_string(perm[i]);
          out.dims[i] = in.dims[static_cast<size_t>(perm[i] - 1)];
          out.names[i] = in.names[static_cast<size_t>(perm[i] - 1)];
        }
        src.forward_line(rng.chance(0.5) ? "x = x.permute(" + args + ")" : "x = torch.permute(x, (" + args + "))");
        out.layout = Layout::kGeneric;
        return Placed{out, moved(in)};
      }));
  ops.push_back(layout_op(
      "torch.narrow", "Narrow", {"slice"}, [](const TensorState& t) { return t.rank() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        std::vector<int> dims;
        for (int d = 1; d < in.rank(); ++d) {
          if (in.dims[static_cast<size_t>(d - 1)] >= 4) dims.push_back(d);
        }
        if (dims.empty()) return std::nullopt;
        int d = rng.pick(dims);
        int64_t n = in.dims[static_cast<size_t>(d - 1)];
        int64_t length = rng.uniform_int(n / 2, n - 1);
        int64_t start = rng.uniform_int(0, n - length);
        if (rng.chance(0.5)) {
          src.forward_line("x = torch.narrow(x, " + std::to_string(d) + ", " + std::to_string(start) + ", " +
                           std::to_string(length) + ")");
        } else {
          std::string index = "x[";
          for (int i = 0; i < d; ++i) index += ":, ";
          index += std::to_string(start) + ":" + std::to_string(start + length) + "]";
          src.forward_line("x = " + index);
        }
        TensorState out = in;
        out.dims[static_cast<size_t>(d - 1)] = length;
        out.names[static_cast<size_t>(d - 1)] = "";
        return Placed{out, moved(out)};
      }));
  ops.push_back(layout_op(
      "torch.select", "Select", {"select"}, [](const TensorState& t) { return t.rank() >= 3; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        int d = seed::draw_dim(in, rng);
        int64_t index = rng.uniform_int(0, in.dims[static_cast<size_t>(d - 1)] - 1);
        if (rng.chance(0.5)) {
          src.forward_line("x = x.select(" + std::to_string(d) + ", " + std::to_string(index) + ")");
        } else {
          std::string s = "x[";
          for (int i = 0; i < d; ++i) s += ":, ";
          src.forward_line("x = " + s + std::to_string(index) + "]");
        }
        TensorState out = seed::drop_dim(in, d);
        return Placed{out, moved(out)};
      }));
  ops.push_back(layout_op(
      "torch.flip", "Flip", {"flip"}, [](const TensorState& t) { return t.rank() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        int d = seed::draw_dim(in, rng);
        std::string dt = seed::dim_literal(in, d, rng);
        src.forward_line(rng.chance(0.5) ? "x = torch.flip(x, [" + dt + "])" : "x = x.flip(" + dt + ")");
        return Placed{in, moved(in)};
      }));
  ops.push_back(layout_op(
      "torch.cat", "Cat", {"cat"}, [](const TensorState& t) { return t.rank() >= 2; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        int d = seed::draw_dim(in, rng);
        int64_t n = in.dims[static_cast<size_t>(d - 1)];
        int64_t m = rng.pick(std::vector<int64_t>{n, std::max<int64_t>(1, n / 2), 2 * n});
        TensorState other = in;
        other.dims[static_cast<size_t>(d - 1)] = m;
        other.names[static_cast<size_t>(d - 1)] = "";
        if (in.sample_numel() + other.sample_numel() > kMaxSampleElements) return std::nullopt;
        std::string y = src.input("y", "torch.rand(" + other.shape_args() + ")");
        src.forward_line("x = torch.cat([x, " + y + "], dim=" + std::to_string(d) + ")");
        TensorState out = in;
        out.dims[static_cast<size_t>(d - 1)] = n + m;
        out.names[static_cast<size_t>(d - 1)] = "";
        out.domain = in.domain == Domain::kReal ? Domain::kReal : Domain::kNonNegative;
        return Placed{out, moved(out)};
      }));
  ops.push_back(layout_op(
      "torch.stack", "Stack", {"stack"}, [](const TensorState& t) { return t.rank() >= 2 && t.rank() <= 4; },
      [](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
        if (2 * in.sample_numel() > kMaxSampleElements) return std::nullopt;
        int d = static_cast<int>(rng.uniform_int(1, in.rank()));
        std::string y = src.input("y", "torch.rand(" + in.shape_args() + ")");
        src.forward_line("x = torch.stack([x, " + y + "], dim=" + std::to_string(d) + ")");
        TensorState out = in;
        out.dims.insert(out.dims.begin() + (d - 1), 2);
        out.names.insert(out.names.begin() + (d - 1), "");
        out.layout = Layout::kGeneric;
        out.domain = in.domain == Domain::kReal ? Domain::kReal : Domain::kNonNegative;
        return Placed{out, moved(out)};
      }));
  for (const char* which : {"tril", "triu"}) {
    ops.push_back(layout_op(
        std::string("torch.") + which, which == std::string("tril") ? "Tril" : "Triu", {which}, rank3_up,
        [which](const TensorState& in, Rng& rng, TaskSource& src) -> std::optional<Placed> {
          std::string diag = rng.chance(0.3) ? ", diagonal=1" : "";
          src.forward_line(rng.chance(0.5)
                               ? "x = torch." + std::string(which) + "(x" + diag + ")"
                               : "x = x." + std::string(which) + "(" + (diag.empty() ? "" : diag.substr(2)) + ")");
          TensorState out = in;
          if (out.domain == Domain::kPositive) out.domain = Domain::kNonNegative;
          return Placed{out, moved(in)};
        }));
  }
}

}  // namespace kforge::synth
