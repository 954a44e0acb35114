// The seed library: every class composes, its declared registry ops exist, and every registry op is
// covered by a class or has a stated reason.
#include <gtest/gtest.h>

#include <set>

#include "ir/op_registry.h"
#include "synth/composer.h"
#include "synth/seed_library.h"

namespace kforge::synth {
namespace {

TEST(SynthLibrary, DeclaredRegistryOpsExist) {
  for (const auto& op : SeedLibrary::get().ops()) {
    EXPECT_FALSE(op.registry_ops.empty()) << op.name;
    for (const auto& r : op.registry_ops) EXPECT_TRUE(ir::op_from_name(r).has_value()) << op.name << ": " << r;
  }
}

TEST(SynthLibrary, NamesAreUnique) {
  std::set<std::string> names;
  std::set<std::string> short_names;
  for (const auto& op : SeedLibrary::get().ops()) {
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_TRUE(short_names.insert(op.short_name).second) << op.short_name;
  }
}

TEST(SynthLibrary, EveryRegistryOpIsCoveredOrExplained) {
  for (const auto& c : registry_coverage(SeedLibrary::get())) {
    EXPECT_TRUE(!c.classes.empty() || !c.reason.empty()) << "registry op " << c.op << " has no class and no reason";
  }
}

TEST(SynthLibrary, CoversTheOperatorFamiliesOfThePaper) {
  std::set<Category> seen;
  for (const auto& op : SeedLibrary::get().ops()) seen.insert(op.category);
  for (Category c : {Category::kLinear, Category::kConvolution, Category::kActivation, Category::kElementwise,
                     Category::kNormalization, Category::kPooling, Category::kReduction, Category::kScan,
                     Category::kLoss, Category::kAttention, Category::kLayout}) {
    EXPECT_TRUE(seen.count(c)) << category_name(c);
  }
}

// Every class composes: on its own from one of its start shapes or, for classes that need positive
// inputs (rsqrt, reciprocal), after an operator that makes them; its output fits the budget.
TEST(SynthLibrary, EveryClassComposes) {
  const auto& lib = SeedLibrary::get();
  ComposeOptions options;
  for (const auto& op : lib.ops()) {
    Rng rng(mix_seed(11, static_cast<uint64_t>(&op - lib.ops().data())));
    auto task = compose_sequence(lib, {&op}, rng, options);
    for (size_t p = 0; !task && p < lib.ops().size(); ++p)
      task = compose_sequence(lib, {&lib.ops()[p], &op}, rng, options);
    ASSERT_TRUE(task.has_value()) << op.name << " does not compose";
    EXPECT_LE(task->output.sample_numel(), options.max_sample_elements) << op.name;
    EXPECT_EQ(task->output.names.size(), task->output.dims.size()) << op.name;
    std::string src = task->source.render(16);
    EXPECT_NE(src.find("class Model(nn.Module):"), std::string::npos);
    EXPECT_NE(src.find("\nbatch_size = 16\n"), std::string::npos);
    EXPECT_NE(src.find("def get_inputs():"), std::string::npos);
    EXPECT_NE(src.find("def get_init_inputs():"), std::string::npos);
  }
}

TEST(SynthLibrary, TerminalClassesHaveIntegerResults) {
  const auto& lib = SeedLibrary::get();
  for (const auto& op : lib.ops()) {
    if (!op.terminal) continue;
    Rng rng(3);
    auto task = compose_sequence(lib, {&op}, rng, {});
    ASSERT_TRUE(task.has_value()) << op.name;
    EXPECT_FALSE(task->output.floating) << op.name;
  }
}

}  // namespace
}  // namespace kforge::synth
