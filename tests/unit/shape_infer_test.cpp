// Shape inference rules on cases whose answers torch gives (values checked against torch 1.13).
#include <gtest/gtest.h>

#include "ir/shape_rules.h"
#include "test_util.h"

namespace kforge::ir {
namespace {

using kforge::testing::graph_error;
using kforge::testing::one_node_graph;

// The graph parses only if kforge infers exactly `out`.
void expect_infers(const std::string& op, const std::vector<std::pair<std::string, Shape>>& ins,
                   const std::string& attrs, const Shape& out, const std::string& dtype = "float32",
                   const std::vector<std::string>& in_dtypes = {}) {
  std::string e = graph_error(one_node_graph(op, ins, attrs, out, dtype, in_dtypes));
  EXPECT_EQ(e, "") << op << " " << attrs;
}

// The graph is rejected with a message that contains `what`.
void expect_rejects(const std::string& op, const std::vector<std::pair<std::string, Shape>>& ins,
                    const std::string& attrs, const Shape& out, const std::string& what,
                    const std::vector<std::string>& in_dtypes = {}) {
  std::string e = graph_error(one_node_graph(op, ins, attrs, out, "float32", in_dtypes));
  EXPECT_NE(e.find(what), std::string::npos) << op << " " << attrs << ": " << e;
}

TEST(ShapeInfer, Broadcasting) {
  expect_infers("add", {{"a", {8, 1, 6, 1}}, {"b", {7, 1, 5}}}, "{}", {8, 7, 6, 5});
  expect_infers("mul", {{"a", {4, 5}}}, R"({"scalar": 2.5})", {4, 5});
  EXPECT_NE(graph_error(one_node_graph("add", {{"a", {3}}, {"b", {4}}}, "{}", {4})).find("do not broadcast"),
            std::string::npos);
}

TEST(ShapeInfer, Matmul) {
  expect_infers("matmul", {{"a", {16, 1024, 2048}}, {"b", {2048, 768}}}, "{}", {16, 1024, 768});
  expect_infers("matmul", {{"a", {5}}, {"b", {5}}}, "{}", {});
  expect_infers("matmul", {{"a", {3, 5}}, {"b", {5}}}, "{}", {3});
  expect_infers("matmul", {{"a", {2, 1, 3, 4}}, {"b", {7, 4, 6}}}, "{}", {2, 7, 3, 6});
}

TEST(ShapeInfer, ConvAndTransposedConv) {
  expect_infers("conv", {{"x", {2, 4, 10, 12}}, {"w", {6, 2, 3, 5}}},
                R"({"stride":[2,1],"padding":[1,2],"dilation":[1,2],"groups":2})", {2, 6, 5, 8});
  // torch: ConvTranspose2d(4, 6, (3, 5), stride=2, padding=1, output_padding=1, groups=2) on 10x12
  expect_infers("conv_transpose", {{"x", {2, 4, 10, 12}}, {"w", {4, 3, 3, 5}}},
                R"({"stride":[2,2],"padding":[1,1],"output_padding":[1,1],"dilation":[1,1],"groups":2})",
                {2, 6, 20, 26});
}

TEST(ShapeInfer, PoolingWithCeilMode) {
  // torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True) on 6x6 gives 4x4 (last window kept),
  // on 5x5 gives 3x3 (a window starting in the padding is dropped).
  expect_infers("max_pool", {{"x", {1, 1, 6, 6}}},
                R"({"kernel_size":[3,3],"stride":[2,2],"padding":[1,1],"dilation":[1,1],"ceil_mode":true})",
                {1, 1, 4, 4});
  expect_infers("max_pool", {{"x", {1, 1, 5, 5}}},
                R"({"kernel_size":[3,3],"stride":[2,2],"padding":[1,1],"dilation":[1,1],"ceil_mode":true})",
                {1, 1, 3, 3});
  expect_infers("avg_pool", {{"x", {2, 3, 11}}}, R"({"kernel_size":[4],"stride":[3],"padding":[1]})", {2, 3, 4});
}

TEST(ShapeInfer, Reductions) {
  expect_infers("sum", {{"x", {2, 3, 4}}}, R"({"dims":[1],"keepdim":true})", {2, 1, 4});
  expect_infers("mean", {{"x", {2, 3, 4}}}, R"({"dims":[]})", {});
  expect_infers("argmax", {{"x", {2, 3, 4}}}, R"({"dim":2})", {2, 3}, "int64");
  expect_infers("norm", {{"x", {2, 3}}}, R"({"dims":[0,1],"p":2.0})", {});
}

TEST(ShapeInfer, LayoutOps) {
  expect_infers("reshape", {{"x", {2, 3, 4}}}, R"({"shape":[-1, 4]})", {6, 4});
  expect_infers("permute", {{"x", {2, 3, 4}}}, R"({"dims":[2, 0, 1]})", {4, 2, 3});
  expect_infers("slice", {{"x", {10, 3}}}, R"({"dim":0,"start":1,"end":100,"step":3})", {3, 3});
  expect_infers("select", {{"x", {10, 3}}}, R"({"dim":1,"index":-1})", {10});
  expect_infers("diag", {{"x", {4}}}, R"({"diagonal":1})", {5, 5});
  expect_infers("diag", {{"x", {3, 5}}}, R"({"diagonal":-1})", {2});
  expect_infers("cat", {{"a", {2, 3}}, {"b", {2, 5}}}, R"({"dim":1})", {2, 8});
  expect_infers("stack", {{"a", {2, 3}}, {"b", {2, 3}}}, R"({"dim":2})", {2, 3, 2});
  expect_infers("expand", {{"x", {3, 1}}}, R"({"shape":[2, -1, 4]})", {2, 3, 4});
}

TEST(ShapeInfer, EinsumAndLosses) {
  expect_infers("einsum", {{"a", {2, 3, 4, 5}}, {"b", {5, 6}}}, R"({"equation":"bijl,lk->bijk"})", {2, 3, 4, 6});
  expect_infers("einsum", {{"a", {3, 4}}, {"b", {4, 5}}}, R"({"equation":"ij,jk"})", {3, 5});
  expect_infers("kl_div", {{"a", {8, 10}}, {"b", {8, 10}}}, R"({"reduction":"batchmean"})", {});
  expect_infers("mse_loss", {{"a", {8, 10}}, {"b", {8, 10}}}, R"({"reduction":"none"})", {8, 10});
  expect_infers("triplet_margin_loss", {{"a", {8, 10}}, {"p", {8, 10}}, {"n", {8, 10}}}, R"({"reduction":"none"})",
                {8});
}

TEST(ShapeInfer, LogicalOps) {
  expect_infers("logical_not", {{"x", {2, 3}}}, "{}", {2, 3}, "bool", {"bool"});
  expect_infers("logical_not", {{"x", {5}}}, "{}", {5}, "bool");  // torch takes any dtype
  expect_infers("logical_and", {{"a", {4, 1}}, {"b", {3}}}, "{}", {4, 3}, "bool", {"bool", "bool"});
  expect_infers("logical_or", {{"a", {2, 3}}, {"b", {2, 3}}}, "{}", {2, 3}, "bool", {"bool", "float32"});
  expect_rejects("logical_or", {{"a", {2}}, {"b", {3}}}, "{}", {3}, "do not broadcast", {"bool", "bool"});
}

TEST(ShapeInfer, IndexOps) {
  // F.embedding(index (4, 7), weight (10, 16)) -> (4, 7, 16); int32 indices work too.
  expect_infers("embedding", {{"w", {10, 16}}, {"i", {4, 7}}}, "{}", {4, 7, 16}, "float32", {"float32", "int64"});
  expect_infers("embedding", {{"w", {10, 16}}, {"i", {5}}}, "{}", {5, 16}, "float32", {"float32", "int32"});
  expect_rejects("embedding", {{"w", {10, 16, 2}}, {"i", {5}}}, "{}", {5, 16, 2}, "2-D weight", {"float32", "int64"});
  expect_rejects("embedding", {{"w", {10, 16}}, {"i", {5}}}, "{}", {5, 16}, "int64 or int32 index",
                 {"float32", "float32"});
  expect_infers("index_select", {{"x", {3, 4, 5}}, {"i", {6}}}, R"({"dim": 0})", {6, 4, 5}, "float32",
                {"float32", "int64"});
  expect_infers("index_select", {{"x", {3, 4, 5}}, {"i", {2}}}, R"({"dim": -1})", {3, 4, 2}, "float32",
                {"float32", "int64"});
  expect_infers("index_select", {{"x", {3, 4, 5}}, {"i", {}}}, R"({"dim": 1})", {3, 1, 5}, "float32",
                {"float32", "int64"});  // a 0-d index selects one
  expect_rejects("index_select", {{"x", {3, 4}}, {"i", {2, 2}}}, R"({"dim": 0})", {4, 4}, "1-D index",
                 {"float32", "int64"});
  expect_infers("gather", {{"x", {3, 4, 5}}, {"i", {3, 9, 5}}}, R"({"dim": 1})", {3, 9, 5}, "float32",
                {"float32", "int64"});
  expect_infers("gather", {{"x", {3, 4, 5}}, {"i", {2, 2, 2}}}, R"({"dim": 2})", {2, 2, 2}, "float32",
                {"float32", "int64"});
  expect_rejects("gather", {{"x", {3, 4, 5}}, {"i", {4, 2, 5}}}, R"({"dim": 1})", {4, 2, 5}, "larger than input",
                 {"float32", "int64"});
  expect_rejects("gather", {{"x", {3, 4}}, {"i", {3}}}, R"({"dim": 1})", {3}, "same number of dims",
                 {"float32", "int64"});
  expect_rejects("gather", {{"x", {3, 4}}, {"i", {3, 4}}}, R"({"dim": 1})", {3, 4}, "int64 index",
                 {"float32", "int32"});
}

TEST(ShapeInfer, UnfoldAndConstantPad) {
  // torch.randn(2, 3, 16).unfold(2, 4, 2) -> (2, 3, 7, 4); a window count rounds down.
  expect_infers("unfold", {{"x", {2, 3, 16}}}, R"({"dim": 2, "size": 4, "step": 2})", {2, 3, 7, 4});
  expect_infers("unfold", {{"x", {2, 3, 17}}}, R"({"dim": -1, "size": 4, "step": 3})", {2, 3, 5, 4});
  expect_infers("unfold", {{"x", {5, 6}}}, R"({"dim": 0, "size": 5, "step": 1})", {1, 6, 5});
  expect_rejects("unfold", {{"x", {5, 6}}}, R"({"dim": 0, "size": 6, "step": 1})", {0, 6, 6}, "does not fit");
  expect_rejects("unfold", {{"x", {5, 6}}}, R"({"dim": 0, "size": 2, "step": 0})", {4, 6, 2}, "positive");
  // F.pad(x (2, 3, 4), (1, 2)) pads the last dim; (0, 0, -1, 3) crops one row before dim 1 and adds three after.
  expect_infers("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [1, 2], "value": 0.5})", {2, 3, 7});
  expect_infers("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [0, 0, -1, 3]})", {2, 5, 4});
  expect_infers("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [-2, -2]})", {2, 3, 0});
  expect_rejects("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [-3, -2]})", {2, 3, 0}, "below zero");
  expect_rejects("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [1]})", {2, 3, 5}, "pairs");
  expect_rejects("constant_pad", {{"x", {4}}}, R"({"pad": [1, 1, 1, 1]})", {6}, "more dims");
}

TEST(ShapeRules, WindowArithmetic) {
  EXPECT_EQ(window_out_size(32, 3, 1, 0, 1, false), 30);
  EXPECT_EQ(window_out_size(7, 2, 2, 0, 1, true), 4);
  EXPECT_EQ(conv_transpose_out_size(16, 3, 2, 1, 1, 1), 32);
}

}  // namespace
}  // namespace kforge::ir
