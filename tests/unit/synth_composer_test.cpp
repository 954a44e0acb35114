// Composition: determinism from the seed, the paper's ops-per-task distribution, coverage of the
// library, and KernelBench's file layout.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "synth/composer.h"
#include "synth/rng.h"

namespace kforge::synth {
namespace {

std::string compose_source(uint64_t seed, int64_t batch = 128) {
  Rng rng(seed);
  auto task = compose_task(SeedLibrary::get(), rng, {});
  EXPECT_TRUE(task.has_value());
  return task ? task->source.render(batch) : "";
}

TEST(SynthRng, SameSeedSameDraws) {
  Rng a(42);
  Rng b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.uniform_int(-5, 1000), b.uniform_int(-5, 1000));
  EXPECT_NE(mix_seed(1, 0), mix_seed(1, 1));
  EXPECT_NE(mix_seed(1, 0), mix_seed(2, 0));
}

TEST(SynthRng, UniformIntStaysInRange) {
  Rng r(7);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    int64_t v = r.uniform_int(3, 9);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 9);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(SynthComposer, SameSeedSameTask) {
  for (uint64_t s = 0; s < 50; ++s) EXPECT_EQ(compose_source(mix_seed(9, s)), compose_source(mix_seed(9, s)));
  EXPECT_NE(compose_source(mix_seed(9, 0)), compose_source(mix_seed(9, 1)));
}

TEST(SynthComposer, OpCountsFollowThePaper) {
  std::map<size_t, int> counts;
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    Rng rng(mix_seed(5, static_cast<uint64_t>(i)));
    auto task = compose_task(SeedLibrary::get(), rng, {});
    ASSERT_TRUE(task.has_value());
    counts[task->ops.size()]++;
    EXPECT_EQ(task->data_source(), "torch#" + std::to_string(task->ops.size()));
  }
  // Table 3: 3.40 / 83.77 / 7.62 / 2.80 / 1.23 percent (of the torch tasks).
  EXPECT_NEAR(counts[2] / double(n), 0.848, 0.03);
  EXPECT_NEAR(counts[1] / double(n), 0.034, 0.015);
  EXPECT_NEAR(counts[3] / double(n), 0.077, 0.02);
  EXPECT_GT(counts[5], 0);
}

TEST(SynthComposer, MaxOpsBoundsTheCount) {
  ComposeOptions o;
  o.max_ops = 1;
  for (int i = 0; i < 100; ++i) {
    Rng rng(static_cast<uint64_t>(i));
    auto task = compose_task(SeedLibrary::get(), rng, o);
    ASSERT_TRUE(task.has_value());
    EXPECT_EQ(task->ops.size(), 1u);
  }
}

TEST(SynthComposer, DrawsReachEveryClass) {
  std::set<std::string> used;
  for (int i = 0; i < 4000; ++i) {
    Rng rng(mix_seed(13, static_cast<uint64_t>(i)));
    auto task = compose_task(SeedLibrary::get(), rng, {});
    ASSERT_TRUE(task.has_value());
    for (const auto& n : task->op_names()) used.insert(n);
  }
  for (const auto& op : SeedLibrary::get().ops()) EXPECT_TRUE(used.count(op.name)) << op.name << " never drawn";
}

TEST(SynthComposer, StacksWithinTheBudgets) {
  ComposeOptions o;
  for (int i = 0; i < 500; ++i) {
    Rng rng(mix_seed(17, static_cast<uint64_t>(i)));
    auto task = compose_task(SeedLibrary::get(), rng, o);
    ASSERT_TRUE(task.has_value());
    EXPECT_LE(task->sample_flops, o.max_sample_flops);
    EXPECT_LE(task->max_sample_elements, o.max_sample_elements);
    for (size_t k = 0; k + 1 < task->ops.size(); ++k) EXPECT_FALSE(task->ops[k]->terminal);
  }
}

TEST(SynthComposer, WritesAKernelBenchFile) {
  const auto& lib = SeedLibrary::get();
  Rng rng(1);
  auto task = compose_sequence(lib, {lib.find("torch.nn.Conv2d"), lib.find("torch.nn.ReLU")}, rng, {});
  ASSERT_TRUE(task.has_value());
  std::string src = task->source.render(64);
  EXPECT_EQ(src.rfind("import torch\nimport torch.nn as nn\n", 0), 0u);
  EXPECT_NE(src.find("nn.Conv2d(in_channels, out_channels, kernel_size"), std::string::npos) << src;
  EXPECT_NE(src.find("    x = torch.rand(batch_size, in_channels, height, width)\n"), std::string::npos) << src;
  EXPECT_NE(src.find("    return [in_channels, out_channels, kernel_size"), std::string::npos) << src;
  EXPECT_EQ(task->short_title(), "Conv2d_ReLU");
}

}  // namespace
}  // namespace kforge::synth
