// compose_task: op count from the paper's distribution, first operator and input, then each next
// operator among those that accept the running value.
#include "synth/composer.h"

#include <algorithm>
#include <map>

namespace kforge::synth {

namespace {

// How often each category is drawn (then a class uniformly within it): compute-heavy families lead,
// as in KernelBench's fused problems.
double category_weight(Category c) {
  switch (c) {
    case Category::kLinear: return 3;
    case Category::kConvolution: return 3;
    case Category::kActivation: return 2;
    case Category::kElementwise: return 2;
    case Category::kNormalization: return 2;
    case Category::kPooling: return 1.5;
    case Category::kReduction: return 1.5;
    case Category::kScan: return 0.5;
    case Category::kLoss: return 1;
    case Category::kAttention: return 1;
    case Category::kLayout: return 1;
  }
  return 1;
}

// A class among `candidates`: a category by weight, then a class of it uniformly.
size_t draw_class(const std::vector<const SeedOp*>& candidates, Rng& rng) {
  std::map<Category, std::vector<size_t>> by_category;
  for (size_t i = 0; i < candidates.size(); ++i) by_category[candidates[i]->category].push_back(i);
  std::vector<Category> cats;
  std::vector<double> weights;
  for (const auto& [c, members] : by_category) {
    cats.push_back(c);
    weights.push_back(category_weight(c));
  }
  const auto& members = by_category[cats[rng.weighted(weights)]];
  return rng.pick(members);
}

// The first input: sizes for the start kind (KernelBench-like: large per-sample tensors, so that
// realistic batches reach the runtime window), named by module constants.
TensorState draw_input(const StartShape& start, Category first, Rng& rng, TaskSource& src, int64_t max_elements) {
  constexpr int64_t kMinElements = int64_t{1} << 14;
  for (int attempt = 0;; ++attempt) {
    std::vector<int64_t> dims;
    std::vector<std::string> names;
    auto pick = [&](std::vector<int64_t> values) { return rng.pick(values); };
    switch (start.layout) {
      case Layout::kFeatures:
        if (first == Category::kLinear) {
          dims = {pick({1024, 2048, 4096, 8192, 16384, 32768})};
          names = {"in_features"};
        } else {
          dims = {pick({16384, 32768, 65536, 131072, 262144, 393216})};
          names = {"dim"};
        }
        break;
      case Layout::kSequence:
        dims = {pick({128, 256, 512, 1024, 2048, 4096}), pick({128, 256, 512, 768, 1024, 2048})};
        names = {"seq_len", "hidden_size"};
        break;
      case Layout::kHeads:
        dims = {pick({4, 8, 12, 16, 32}), pick({64, 128, 256, 512, 1024, 2048}), pick({32, 64, 128})};
        names = {"num_heads", "seq_len", "head_dim"};
        break;
      case Layout::kChannels:
        if (start.rank == 3) {
          dims = {pick({3, 8, 16, 32, 64, 128}), pick({1024, 2048, 4096, 8192, 16384, 32768, 65536})};
          names = {"in_channels", "length"};
        } else if (start.rank == 4) {
          int64_t h = pick({32, 48, 64, 96, 128, 224, 256, 512});
          dims = {pick({3, 8, 16, 32, 64}), h, rng.chance(0.75) ? h : pick({32, 64, 128, 256, 512})};
          names = {"in_channels", "height", "width"};
        } else {
          int64_t h = pick({16, 32, 48, 64, 128});
          dims = {pick({3, 4, 8, 16, 32}), pick({8, 16, 24, 32, 64}), h, h};
          names = {"in_channels", "depth", "height", "width"};
        }
        break;
      default: KF_CHECK(false) << "no start shape for layout " << layout_name(start.layout);
    }
    TensorState t = unnamed(dims, start.layout, Domain::kNonNegative);
    const bool fits = t.sample_numel() >= kMinElements && t.sample_numel() <= max_elements / 2;
    if (!fits && attempt < 64) continue;
    for (size_t i = 0; i < dims.size(); ++i) t.names[i] = src.constant(names[i], std::to_string(dims[i]), false);
    src.set_input_shape(t.shape_args());
    return t;
  }
}

// One try: `fixed` (when not empty) names the operators; otherwise they are drawn.
std::optional<ComposedTask> try_compose(const SeedLibrary& lib, Rng& rng, const ComposeOptions& o, int count,
                                        const std::vector<const SeedOp*>& fixed) {
  ComposedTask task;
  std::vector<const SeedOp*> openers;
  for (const auto& op : lib.ops()) {
    if (!op.starts.empty() && (!op.terminal || count == 1)) openers.push_back(&op);
  }
  const SeedOp* first = fixed.empty() ? openers[draw_class(openers, rng)] : fixed[0];
  if (first->starts.empty()) return std::nullopt;
  task.input = draw_input(rng.pick(first->starts), first->category, rng, task.source, o.max_sample_elements);
  if (!first->accepts(task.input)) return std::nullopt;
  TensorState state = task.input;
  task.max_sample_elements = state.sample_numel();
  for (int i = 0; i < count; ++i) {
    std::vector<const SeedOp*> candidates;
    if (i == 0) {
      candidates.push_back(first);
    } else if (!fixed.empty()) {
      if (state.floating && fixed[static_cast<size_t>(i)]->accepts(state))
        candidates.push_back(fixed[static_cast<size_t>(i)]);
    } else {
      for (const auto& op : lib.ops()) {
        if (&op == task.ops.back() || (op.terminal && i + 1 < count)) continue;
        if (state.floating && op.accepts(state)) candidates.push_back(&op);
      }
    }
    bool placed = false;
    while (!candidates.empty() && !placed) {
      size_t c = draw_class(candidates, rng);
      TaskSource trial = task.source;
      auto p = candidates[c]->instantiate(state, rng, trial);
      if (p && p->out.sample_numel() >= 1 && p->out.sample_numel() <= o.max_sample_elements &&
          task.sample_flops + p->sample_flops <= o.max_sample_flops) {
        task.source = std::move(trial);
        task.ops.push_back(candidates[c]);
        task.sample_flops += p->sample_flops;
        task.max_sample_elements = std::max(task.max_sample_elements, p->out.sample_numel());
        state = p->out;
        placed = true;
      } else {
        candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(c));
      }
    }
    if (!placed) return std::nullopt;
  }
  task.output = state;
  std::string title;
  for (const auto* op : task.ops) title += (title.empty() ? "" : " -> ") + op->short_name;
  task.source.set_title(title + " (composed by kforge synth)");
  return task;
}

}  // namespace

std::vector<std::string> ComposedTask::op_names() const {
  std::vector<std::string> names;
  for (const auto* op : ops) names.push_back(op->name);
  return names;
}

std::string ComposedTask::short_title() const {
  std::string s;
  for (const auto* op : ops) s += (s.empty() ? "" : "_") + op->short_name;
  return s;
}

std::vector<double> op_count_weights(int max_ops) {
  const std::vector<double> paper = {3.40, 83.77, 7.62, 2.80, 1.23};  // torch ops x1 .. x5
  std::vector<double> w;
  for (int k = 1; k <= max_ops; ++k) {
    w.push_back(k <= 5 ? paper[static_cast<size_t>(k - 1)] : paper.back() / static_cast<double>(1 << (k - 5)));
  }
  return w;
}

std::optional<ComposedTask> compose_task(const SeedLibrary& lib, Rng& rng, const ComposeOptions& options) {
  const int count = static_cast<int>(rng.weighted(op_count_weights(options.max_ops))) + 1;
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto task = try_compose(lib, rng, options, count, {});
    if (task) return task;
  }
  return std::nullopt;
}

std::optional<ComposedTask> compose_sequence(const SeedLibrary& lib, const std::vector<const SeedOp*>& ops, Rng& rng,
                                             const ComposeOptions& options) {
  if (ops.empty()) return std::nullopt;
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto task = try_compose(lib, rng, options, static_cast<int>(ops.size()), ops);
    if (task) return task;
  }
  return std::nullopt;
}

}  // namespace kforge::synth
