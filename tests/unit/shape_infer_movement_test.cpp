// Shape rules of the second batch of ops (shape_infer_movement.cpp and the new binary / unary ops): shapes
// and dtypes torch 1.13 gives, and the errors a user sees.
#include <gtest/gtest.h>

#include "ir/op_registry.h"
#include "test_util.h"

namespace kforge::ir {
namespace {

using kforge::testing::graph_error;
using kforge::testing::one_node_graph;

void expect_infers(const std::string& op, const std::vector<std::pair<std::string, Shape>>& ins,
                   const std::string& attrs, const Shape& out, const std::string& dtype = "float32",
                   const std::vector<std::string>& in_dtypes = {}) {
  std::string e = graph_error(one_node_graph(op, ins, attrs, out, dtype, in_dtypes));
  EXPECT_EQ(e, "") << op << " " << attrs;
}

void expect_rejects(const std::string& op, const std::vector<std::pair<std::string, Shape>>& ins,
                    const std::string& attrs, const Shape& out, const std::string& what,
                    const std::vector<std::string>& in_dtypes = {}, const std::string& dtype = "float32") {
  std::string e = graph_error(one_node_graph(op, ins, attrs, out, dtype, in_dtypes));
  EXPECT_NE(e.find(what), std::string::npos) << op << " " << attrs << ": " << e;
}

TEST(ShapeInferMovement, RoundedDivisionKeepsIntegers) {
  // torch.div(int64, int64, rounding_mode="floor") is int64; with a float scalar it is float32.
  expect_infers("floor_divide", {{"a", {4, 1}}, {"b", {3}}}, "{}", {4, 3}, "int64", {"int64", "int64"});
  expect_infers("trunc_divide", {{"a", {4}}}, R"({"scalar": 3})", {4}, "int64", {"int64"});
  expect_infers("remainder", {{"a", {4}}}, R"({"scalar": 2.5})", {4}, "float32", {"int64"});
  expect_infers("fmod", {{"a", {2, 3}}, {"b", {2, 3}}}, "{}", {2, 3}, "float64", {"float32", "float64"});
  expect_rejects("remainder", {{"a", {2}}, {"b", {3}}}, "{}", {3}, "do not broadcast");
}

TEST(ShapeInferMovement, BitwiseOpsTakeBoolAndIntegers) {
  expect_infers("bitwise_xor", {{"a", {4, 1}}, {"b", {3}}}, "{}", {4, 3}, "bool", {"bool", "bool"});
  expect_infers("bitwise_and", {{"a", {4}}}, R"({"scalar": 12})", {4}, "int64", {"int64"});
  expect_infers("bitwise_or", {{"a", {4}}, {"b", {4}}}, "{}", {4}, "int64", {"int32", "int64"});
  expect_infers("bitwise_not", {{"x", {5}}}, "{}", {5}, "int32", {"int32"});
  expect_infers("bitwise_not", {{"x", {5}}}, "{}", {5}, "bool", {"bool"});
  expect_rejects("bitwise_and", {{"a", {4}}, {"b", {4}}}, "{}", {4}, "bit operation", {"float32", "int64"});
  expect_rejects("bitwise_not", {{"x", {4}}}, "{}", {4}, "bit operation", {"float32"});
  expect_rejects("bitwise_or", {{"a", {4}}}, R"({"scalar": 1.5})", {4}, "integer or a bool", {"int64"}, "int64");
}

TEST(ShapeInferMovement, ModePads) {
  // F.pad(x (2, 3, 6, 7), (2, 1, 3, 0), mode="reflect") -> (2, 3, 9, 10).
  expect_infers("reflect_pad", {{"x", {2, 3, 6, 7}}}, R"({"pad": [2, 1, 3, 0]})", {2, 3, 9, 10});
  expect_infers("replicate_pad", {{"x", {2, 3, 1}}}, R"({"pad": [4, 5]})", {2, 3, 10});
  expect_infers("circular_pad", {{"x", {2, 3, 4}}}, R"({"pad": [4, 0, 1, 1]})", {2, 5, 8});
  expect_rejects("reflect_pad", {{"x", {2, 3, 4}}}, R"({"pad": [4, 0]})", {2, 3, 8}, "smaller than dim 2");
  expect_rejects("circular_pad", {{"x", {2, 3, 4}}}, R"({"pad": [5, 0]})", {2, 3, 9}, "at most dim 2");
  expect_rejects("replicate_pad", {{"x", {2, 3, 4}}}, R"({"pad": [-1, 0]})", {2, 3, 3}, "negative");
  expect_rejects("reflect_pad", {{"x", {4}}}, R"({"pad": [1, 1, 1, 1]})", {6}, "more dims");
  expect_rejects("reflect_pad", {{"x", {4}}}, R"({"pad": [1]})", {5}, "pairs");
}

TEST(ShapeInferMovement, Resampling) {
  expect_infers("upsample_nearest", {{"x", {2, 3, 5, 7}}}, R"({"size": [10, 14], "scale": 2.0})", {2, 3, 10, 14});
  expect_infers("upsample_nearest", {{"x", {2, 3, 7}}}, R"({"size": [4]})", {2, 3, 4}, "int64", {"int64"});
  expect_infers("upsample_linear", {{"x", {1, 2, 3, 4, 5}}}, R"({"size": [6, 8, 10], "align_corners": true})",
                {1, 2, 6, 8, 10});
  expect_rejects("upsample_linear", {{"x", {2, 3, 7}}}, R"({"size": [4]})", {2, 3, 4}, "float tensor", {"int64"},
                 "int64");
  expect_rejects("upsample_nearest", {{"x", {3, 7}}}, R"({"size": [4, 5]})", {4, 5}, "rank >= 3");
  expect_rejects("upsample_nearest", {{"x", {1, 3, 7}}}, R"({"size": [0]})", {1, 3, 0}, "positive");
  expect_rejects("upsample_nearest", {{"x", {1, 3, 7}}}, R"({"size": [3], "scale": -1.0})", {1, 3, 3}, "positive");
  expect_rejects("upsample_nearest", {{"x", {1, 2, 3, 4, 5}}}, R"({"size": [1, 2, 3, 4]})", {1, 1, 2, 3, 4},
                 "1 to 3 trailing dims");
}

TEST(ShapeInferMovement, BicubicResampling) {
  expect_infers("upsample_bicubic", {{"x", {2, 3, 5, 7}}}, R"({"size": [10, 14], "scale": 2.0})", {2, 3, 10, 14});
  expect_infers("upsample_bicubic", {{"x", {1, 2, 6, 6}}}, R"({"size": [13, 4], "align_corners": true})", {1, 2, 13, 4},
                "float16", {"float16"});
  expect_rejects("upsample_bicubic", {{"x", {2, 3, 7}}}, R"({"size": [14]})", {2, 3, 14}, "4-D (N, C, H, W)");
  expect_rejects("upsample_bicubic", {{"x", {1, 2, 3, 4, 5}}}, R"({"size": [6, 8, 10]})", {1, 2, 6, 8, 10},
                 "4-D (N, C, H, W)");
  expect_rejects("upsample_bicubic", {{"x", {2, 3, 5, 7}}}, R"({"size": [10, 14]})", {2, 3, 10, 14}, "float tensor",
                 {"int64"}, "int64");
}

TEST(ShapeInferMovement, GridSample) {
  // F.grid_sample(x (2, 3, 8, 9), grid (2, 5, 6, 2)) -> (2, 3, 5, 6).
  expect_infers("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 2}}}, "{}", {2, 3, 5, 6});
  expect_infers("grid_sample", {{"x", {1, 4, 3, 3}}, {"g", {1, 7, 2, 2}}},
                R"({"mode": "nearest", "padding_mode": "reflection", "align_corners": true})", {1, 4, 7, 2}, "float64",
                {"float64", "float64"});
  expect_rejects("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 2}}}, R"({"mode": "bicubic"})", {2, 3, 5, 6},
                 "bilinear or nearest");
  expect_rejects("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 2}}}, R"({"padding_mode": "circular"})",
                 {2, 3, 5, 6}, "zeros, border, reflection");
  expect_rejects("grid_sample", {{"x", {2, 3, 4, 8, 9}}, {"g", {2, 4, 5, 6, 3}}}, "{}", {2, 3, 4, 5, 6}, "4-D input");
  expect_rejects("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {3, 5, 6, 2}}}, "{}", {2, 3, 5, 6}, "input's N = 2");
  expect_rejects("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 3}}}, "{}", {2, 3, 5, 6}, "(N, Ho, Wo, 2)");
  expect_rejects("grid_sample", {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 2}}}, "{}", {2, 3, 5, 6}, "same dtype",
                 {"float32", "float64"});
  expect_rejects("grid_sample", {{"x", {2, 3, 0, 9}}, {"g", {2, 5, 6, 2}}}, "{}", {2, 3, 5, 6}, "empty spatial");
}

TEST(ShapeInferMovement, OrderOps) {
  expect_infers("sort", {{"x", {4, 9}}}, R"({"dim": 1, "descending": true})", {4, 9});
  expect_infers("argsort", {{"x", {4, 9}}}, R"({"dim": 0})", {4, 9}, "int64");
  expect_infers("topk", {{"x", {4, 9}}}, R"({"k": 3, "dim": -1})", {4, 3});
  expect_infers("topk_indices", {{"x", {6, 3, 8}}}, R"({"k": 2, "dim": 0, "largest": false})", {2, 3, 8}, "int64");
  expect_infers("topk", {{"x", {4, 9}}}, R"({"k": 0, "dim": 1})", {4, 0});
  expect_rejects("topk", {{"x", {4, 9}}}, R"({"k": 10, "dim": 1})", {4, 10}, "outside [0, 9]");
  expect_rejects("sort", {{"x", {4, 9}}}, R"({"dim": 2})", {4, 9}, "out of range");
  expect_infers("cummax", {{"x", {4, 9}}}, R"({"dim": 1})", {4, 9}, "int64", {"int64"});
  expect_infers("cummin_indices", {{"x", {4, 9}}}, R"({"dim": 0})", {4, 9}, "int64");
  expect_rejects("cummax_indices", {{"x", {4, 9}}}, R"({"dim": -3})", {4, 9}, "out of range", {}, "int64");
}

TEST(ShapeInferMovement, ScatterOps) {
  // x.scatter(1, index (4, 6), src (4, 10)) keeps x's shape; src may be larger than the index.
  expect_infers("scatter", {{"x", {4, 10}}, {"i", {4, 6}}, {"s", {4, 10}}}, R"({"dim": 1})", {4, 10}, "float32",
                {"float32", "int64", "float32"});
  expect_infers("scatter_value", {{"x", {7, 3}}, {"i", {4, 3}}}, R"({"dim": 0, "value": 2.5})", {7, 3}, "float32",
                {"float32", "int64"});
  expect_infers("scatter_add", {{"x", {6, 4}}, {"i", {6, 4}}, {"s", {6, 4}}}, R"({"dim": 0})", {6, 4}, "int64",
                {"int64", "int64", "int64"});
  expect_rejects("scatter", {{"x", {4, 10}}, {"i", {4, 6}}, {"s", {4, 10}}}, R"({"dim": 1})", {4, 10}, "int64 index",
                 {"float32", "int32", "float32"});
  expect_rejects("scatter", {{"x", {4, 10}}, {"i", {5, 6}}, {"s", {5, 10}}}, R"({"dim": 1})", {4, 10},
                 "larger than input", {"float32", "int64", "float32"});
  expect_rejects("scatter_add", {{"x", {4, 10}}, {"i", {4, 6}}, {"s", {4, 5}}}, R"({"dim": 1})", {4, 10},
                 "larger than src", {"float32", "int64", "float32"});
  expect_rejects("scatter", {{"x", {4, 10}}, {"i", {4, 6}}, {"s", {4, 10}}}, R"({"dim": 1})", {4, 10}, "one dtype",
                 {"float32", "int64", "float64"});
  expect_rejects("scatter", {{"x", {4, 10}}, {"i", {4}}, {"s", {4, 10}}}, R"({"dim": 1})", {4, 10},
                 "same number of dims", {"float32", "int64", "float32"});
  expect_rejects("scatter_add", {{"x", {4}}, {"i", {4}}, {"s", {4}}}, R"({"dim": 0})", {4}, "bool",
                 {"bool", "int64", "bool"}, "bool");
}

TEST(ShapeInferMovement, OneHotAndEmbeddingBag) {
  expect_infers("one_hot", {{"i", {3, 4}}}, R"({"num_classes": 6})", {3, 4, 6}, "int64", {"int64"});
  expect_rejects("one_hot", {{"i", {3}}}, R"({"num_classes": -1})", {3, 1}, "num_classes", {"int64"}, "int64");
  expect_rejects("one_hot", {{"i", {3}}}, R"({"num_classes": 4})", {3, 4}, "int64 index", {"int32"}, "int64");
  // nn.EmbeddingBag(30, 8)(index (20,), offsets (5,)) -> (5, 8); include_last_offset drops a bag.
  expect_infers("embedding_bag", {{"w", {30, 8}}, {"i", {20}}, {"o", {5}}}, R"({"mode": "sum"})", {5, 8}, "float32",
                {"float32", "int64", "int64"});
  expect_infers("embedding_bag", {{"w", {30, 8}}, {"i", {20}}, {"o", {5}}},
                R"({"mode": "max", "include_last_offset": true})", {4, 8}, "float32", {"float32", "int32", "int32"});
  expect_infers("embedding_bag", {{"w", {30, 8}}, {"i", {6, 5}}}, R"({"mode": "mean"})", {6, 8}, "float32",
                {"float32", "int64"});
  expect_rejects("embedding_bag", {{"w", {30, 8}}, {"i", {20}}}, R"({"mode": "mean"})", {1, 8}, "2-D index",
                 {"float32", "int64"});
  expect_rejects("embedding_bag", {{"w", {30, 8}}, {"i", {4, 5}}, {"o", {4}}}, R"({"mode": "sum"})", {4, 8},
                 "1-D index", {"float32", "int64", "int64"});
  expect_rejects("embedding_bag", {{"w", {30, 8}}, {"i", {20}}, {"o", {5}}}, R"({"mode": "prod"})", {5, 8},
                 "sum, mean or max", {"float32", "int64", "int64"});
  expect_rejects("embedding_bag", {{"w", {30, 8}}, {"i", {20}}, {"o", {5}}}, R"({"mode": "sum"})", {5, 8}, "one dtype",
                 {"float32", "int64", "int32"});
}

TEST(ShapeInferMovement, Fold) {
  // F.fold((2, 27, 64), (8, 8), 3, padding=1) -> (2, 3, 8, 8); unbatched (24, 15) with stride 2 -> (4, 9, 8).
  const std::string k3 =
      R"({"output_size": [8, 8], "kernel_size": [3, 3], "dilation": [1, 1], "padding": [1, 1], "stride": [1, 1]})";
  expect_infers("fold", {{"x", {2, 27, 64}}}, k3, {2, 3, 8, 8});
  expect_infers(
      "fold", {{"x", {24, 15}}},
      R"({"output_size": [9, 8], "kernel_size": [2, 3], "dilation": [2, 1], "padding": [1, 0], "stride": [2, 2]})",
      {4, 9, 8});
  expect_rejects("fold", {{"x", {2, 27, 60}}}, k3, {2, 3, 8, 8}, "has 60 blocks");
  expect_rejects("fold", {{"x", {2, 26, 64}}}, k3, {2, 3, 8, 8}, "not a multiple");
  expect_rejects("fold", {{"x", {1, 2, 27, 64}}}, k3, {2, 3, 8, 8}, "(N, C * kh * kw, L)");
}

TEST(OpRegistryMovement, FamiliesAndSchemas) {
  for (OpId id : {OpId::kFloorDivide, OpId::kTruncDivide, OpId::kRemainder, OpId::kFmod, OpId::kBitwiseAnd,
                  OpId::kBitwiseOr, OpId::kBitwiseXor})
    EXPECT_EQ(op_info(id).family, OpFamily::kBinary) << op_info(id).name;
  EXPECT_EQ(op_info(OpId::kBitwiseNot).family, OpFamily::kUnary);
  for (OpId id : {OpId::kReflectPad, OpId::kReplicatePad, OpId::kCircularPad}) {
    EXPECT_EQ(op_info(id).family, OpFamily::kPad);
    EXPECT_FALSE(op_info(id).attr("pad")->has_default);
  }
  EXPECT_EQ(op_info(OpId::kUpsampleLinear).family, OpFamily::kResample);
  EXPECT_EQ(op_info(OpId::kUpsampleBicubic).family, OpFamily::kResample);
  EXPECT_EQ(op_info(OpId::kGridSample).family, OpFamily::kResample);
  EXPECT_EQ(op_info(OpId::kGridSample).min_inputs(), 2u);
  EXPECT_TRUE(op_info(OpId::kUpsampleNearest).attr("scale")->nullable);
  for (OpId id : {OpId::kSort, OpId::kArgsort, OpId::kTopk, OpId::kTopkIndices})
    EXPECT_EQ(op_info(id).family, OpFamily::kOrder);
  for (OpId id : {OpId::kCummax, OpId::kCummin, OpId::kCummaxIndices, OpId::kCumminIndices})
    EXPECT_EQ(op_info(id).family, OpFamily::kCumExtreme);
  EXPECT_EQ(op_info(OpId::kScatter).min_inputs(), 3u);
  EXPECT_EQ(op_info(OpId::kScatterValue).attr("value")->type, AttrType::kScalar);
  EXPECT_EQ(op_info(OpId::kScatterAdd).family, OpFamily::kScatter);
  EXPECT_EQ(op_info(OpId::kOneHot).family, OpFamily::kIndex);
  EXPECT_EQ(op_info(OpId::kEmbeddingBag).min_inputs(), 2u);
  EXPECT_TRUE(op_info(OpId::kEmbeddingBag).inputs[2].optional);
  EXPECT_EQ(op_info(OpId::kFold).family, OpFamily::kFold);
  for (OpFamily f : {OpFamily::kResample, OpFamily::kOrder, OpFamily::kCumExtreme, OpFamily::kScatter, OpFamily::kFold})
    EXPECT_FALSE(is_elementwise(f)) << family_name(f);
}

}  // namespace
}  // namespace kforge::ir
