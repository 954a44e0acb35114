// The second batch of ops in the cost model (roofline flops and bytes) and the value ranges.
#include <gtest/gtest.h>

#include "costmodel/roofline.h"
#include "ir/value_range.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge {
namespace {

using kforge::testing::graph_from_text;

// x (4, 8) float32, i (4, 2) int64 and w (50, 8) float32, then `nodes` (JSON objects), returning y.
ir::Graph movement_graph(const std::string& nodes) {
  return graph_from_text(R"({"format": "kforge.graph/1", "name": "movement",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"},
               {"id": "i", "name": "i", "shape": [4, 2], "dtype": "int64"},
               {"id": "w", "name": "w", "shape": [50, 8], "dtype": "float32"}],
    "params": [], "nodes": [)" +
                         nodes + R"(], "outputs": ["y"]})");
}

std::string node(const std::string& id, const std::string& op, const std::string& inputs, const std::string& attrs,
                 const std::string& shape = "[4, 8]", const std::string& dtype = "float32") {
  return R"({"id": ")" + id + R"(", "op": ")" + op + R"(", "inputs": [)" + inputs + R"(], "attrs": )" + attrs +
         R"(, "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
}

const ir::Node& node_of(const ir::Graph& g, const std::string& id) {
  return *g.producer(g.find(id));
}

TEST(MovementValueRanges, MovedValuesKeepTheirRangeAndWritesJoinTheirs) {
  ir::Graph g = movement_graph(
      node("c", "clamp", R"("x")", R"({"min": 0.0, "max": 1.0})") + "," +
      node("s", "sort", R"("c")", R"({"dim": 1, "descending": true})") + "," +
      node("t", "topk", R"("c")", R"({"k": 3, "dim": 1, "largest": true})", "[4, 3]") + "," +
      node("m", "cummin", R"("c")", R"({"dim": 0})") + "," +
      node("p", "reflect_pad", R"("c")", R"({"pad": [1, 1]})", "[4, 10]") + "," +
      node("u", "upsample_nearest", R"("c")", R"({"size": [16], "scale": null})", "[4, 16]") + "," +
      node("l", "upsample_linear", R"("c")", R"({"size": [16], "align_corners": false, "scale": null})", "[4, 16]") +
      "," + node("v", "scatter_value", R"("c", "i")", R"({"dim": 1, "value": 2.0})") + "," +
      node("a", "scatter_add", R"("c", "i", "c")", R"({"dim": 1})") + "," +
      node("f", "floor_divide", R"("c", null)", R"({"scalar": 2, "reverse": false})") + "," +
      node("y", "scatter", R"("c", "i", "s")", R"({"dim": 1})"));
  const auto r = ir::value_ranges(g);
  auto range = [&](const char* id) { return r[static_cast<size_t>(g.find(id))].str(); };
  for (const char* id : {"s", "t", "m", "p", "u", "y"}) EXPECT_EQ(range(id), "[0, 1]") << id;
  EXPECT_EQ(range("v"), "[0, 2]");
  EXPECT_EQ(range("l"), "any");  // a blend may round past its ends
  EXPECT_EQ(range("a"), "any");
  EXPECT_EQ(range("f"), "any");
}

TEST(MovementCost, FlopsPerFamily) {
  ir::Graph g = movement_graph(
      node("s", "argsort", R"("x")", R"({"dim": 1, "descending": false})", "[4, 8]", "int64") + "," +
      node("a", "scatter_add", R"("x", "i", "x")", R"({"dim": 1})") + "," +
      node("l", "upsample_linear", R"("x")", R"({"size": [16], "align_corners": false, "scale": null})", "[4, 16]") +
      "," +
      node("y", "fold", R"("x")",
           R"({"output_size": [3, 3], "kernel_size": [2, 2], "dilation": [1, 1], "padding": [1, 0], "stride": [1, 1]})",
           "[1, 3, 3]"));
  EXPECT_DOUBLE_EQ(costmodel::node_flops(g, node_of(g, "s")), 32 * 0.5 * 3 * 3);  // bitonic, log2(8) = 3
  EXPECT_DOUBLE_EQ(costmodel::node_flops(g, node_of(g, "a")), 8);                 // one per index element
  EXPECT_DOUBLE_EQ(costmodel::node_flops(g, node_of(g, "l")), 64 * 3 * 2);        // two points per output
  EXPECT_DOUBLE_EQ(costmodel::node_flops(g, node_of(g, "y")), 9 * 4);             // the window per output
}

TEST(MovementCost, EmbeddingBagReadsOneRowPerIndex) {
  ir::Graph g = movement_graph(
      node("y", "embedding_bag", R"("w", "i", null)", R"({"mode": "sum", "include_last_offset": false})", "[4, 8]"));
  schedule::Schedule s = schedule::plan_one_kernel_per_op(g);
  const costmodel::KernelCost c = costmodel::kernel_cost(g, s, s.kernels[0]);
  // 8 indices x 8 features x 4 bytes of the table, the indices (64 bytes), the output (128 bytes)
  EXPECT_DOUBLE_EQ(c.bytes, 8 * 8 * 4 + 64 + 128);
}

}  // namespace
}  // namespace kforge
