// The op registry expands from ops.def with parsed schemas.
#include <gtest/gtest.h>

#include "ir/op_registry.h"

namespace kforge::ir {
namespace {

TEST(OpRegistry, NamesRoundTrip) {
  for (const auto& op : all_ops()) {
    auto id = op_from_name(op.name);
    ASSERT_TRUE(id.has_value()) << op.name;
    EXPECT_EQ(op_info(*id).name, op.name);
  }
  EXPECT_FALSE(op_from_name("no_such_op").has_value());
  EXPECT_EQ(static_cast<int>(all_ops().size()), kNumOps);
}

TEST(OpRegistry, SchemasParse) {
  const OpInfo& conv = op_info(OpId::kConv);
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_TRUE(conv.inputs[2].optional);
  EXPECT_EQ(conv.min_inputs(), 2u);
  const AttrSpec* groups = conv.attr("groups");
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ(groups->type, AttrType::kInt);
  EXPECT_TRUE(groups->has_default);
  EXPECT_EQ(std::get<int64_t>(groups->default_value), 1);
  const AttrSpec* clamp_min = op_info(OpId::kClamp).attr("min");
  ASSERT_NE(clamp_min, nullptr);
  EXPECT_TRUE(clamp_min->nullable);
  EXPECT_TRUE(op_info(OpId::kCat).variadic());
}

TEST(OpRegistry, IndexingAndLogicalOps) {
  EXPECT_EQ(op_info(OpId::kLogicalNot).family, OpFamily::kLogical);
  EXPECT_EQ(op_info(OpId::kLogicalAnd).min_inputs(), 2u);
  EXPECT_TRUE(is_elementwise(OpFamily::kLogical));
  for (OpId id : {OpId::kEmbedding, OpId::kIndexSelect, OpId::kGather}) {
    EXPECT_EQ(op_info(id).family, OpFamily::kIndex) << op_info(id).name;
    EXPECT_EQ(op_info(id).min_inputs(), 2u) << op_info(id).name;
  }
  EXPECT_EQ(op_info(OpId::kEmbedding).inputs[0].name, "weight");
  EXPECT_EQ(op_info(OpId::kGather).attr("dim")->type, AttrType::kInt);
  const OpInfo& unfold = op_info(OpId::kUnfold);
  EXPECT_EQ(unfold.family, OpFamily::kUnfold);
  for (const char* a : {"dim", "size", "step"}) EXPECT_FALSE(unfold.attr(a)->has_default) << a;
  const OpInfo& pad = op_info(OpId::kConstantPad);
  EXPECT_EQ(pad.family, OpFamily::kPad);
  EXPECT_EQ(pad.attr("pad")->type, AttrType::kInts);
  EXPECT_EQ(pad.attr("value")->type, AttrType::kFloat);
  EXPECT_FALSE(is_elementwise(OpFamily::kIndex));
}

}  // namespace
}  // namespace kforge::ir
