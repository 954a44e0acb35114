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
                   const std::string& attrs, const Shape& out, const std::string& dtype = "float32") {
  std::string e = graph_error(one_node_graph(op, ins, attrs, out, dtype));
  EXPECT_EQ(e, "") << op << " " << attrs;
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

TEST(ShapeRules, WindowArithmetic) {
  EXPECT_EQ(window_out_size(32, 3, 1, 0, 1, false), 30);
  EXPECT_EQ(window_out_size(7, 2, 2, 0, 1, true), 4);
  EXPECT_EQ(conv_transpose_out_size(16, 3, 2, 1, 1, 1), 32);
}

}  // namespace
}  // namespace kforge::ir
