// Strided views (ir/strided_view.h): the strides each view op gives, checked against what torch reports for
// the same view (Tensor.stride() and storage_offset(), noted beside each case); the reshapes strides can and
// cannot express; the reduction layout over a view; the legality of reading views in place
// (kernels::reads_through_views, views_read_coalesced); and the graph loader's copy of a shared view per reader.
#include "ir/strided_view.h"

#include <gtest/gtest.h>

#include "codegen/elementwise_index.h"
#include "codegen/program.h"
#include "codegen/reduce_common.h"
#include "kernels/forms.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge {
namespace {

using testing::graph_from_text;

struct Step {
  std::string id, op, input, attrs, shape;
};

// x (float32, `shape`) followed by `steps`, the last one the output.
std::string chain(const std::string& shape, const std::vector<Step>& steps, const std::string& outputs = "") {
  std::string nodes;
  for (const auto& s : steps) {
    if (!nodes.empty()) nodes += ",\n";
    nodes += R"({"id": ")" + s.id + R"(", "op": ")" + s.op + R"(", "inputs": [)" + s.input + R"(], "attrs": )" +
             s.attrs + R"(, "shape": )" + s.shape + R"(, "dtype": "float32"})";
  }
  return R"({"format": "kforge.graph/1", "name": "views",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape + R"(, "dtype": "float32"}], "params": [], "nodes": [)" + nodes + R"(], "outputs": [)" +
         (outputs.empty() ? "\"" + steps.back().id + "\"" : outputs) + "]}";
}

std::optional<ir::StridedView> view_of(const ir::Graph& g, const std::string& id) {
  const ir::Node* n = g.producer(g.find(id));
  return ir::view_chain(g, *n, [](const ir::Node& p) { return ir::is_view_op(p.op); });
}

TEST(StridedView, EachViewOpGivesTorchsStrides) {
  // x = torch.randn(32, 64, 8192); x.unfold(2, 16, 8).stride() == (524288, 8192, 8, 1)
  ir::Graph u = graph_from_text(chain(
      "[32, 64, 8192]", {{"w", "unfold", "\"x\"", R"({"dim": 2, "size": 16, "step": 8})", "[32, 64, 1023, 16]"}}));
  auto w = view_of(u, "w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->strides, (std::vector<int64_t>{524288, 8192, 8, 1}));
  EXPECT_EQ(w->offset, 0);
  EXPECT_EQ(w->source, u.find("x"));
  // x = torch.randn(4, 6, 10); x.permute(2, 0, 1)[1:9:2].select(1, 3) -> strides (2, 1), offset 1 + 3 * 10 = 31:
  // permute (1, 60, 10); slice dim 0 from 1 step 2: offset 1, (2, 60, 10); select dim 1 index 3: +180.
  ir::Graph p = graph_from_text(
      chain("[4, 6, 10]", {{"p", "permute", "\"x\"", R"({"dims": [2, 0, 1]})", "[10, 4, 6]"},
                           {"s", "slice", "\"p\"", R"({"dim": 0, "start": 1, "end": 9, "step": 2})", "[4, 4, 6]"},
                           {"t", "select", "\"s\"", R"({"dim": 1, "index": 3})", "[4, 6]"}}));
  auto t = view_of(p, "t");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->strides, (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(t->offset, 1 + 3 * 60);
  EXPECT_EQ(t->source, p.find("x"));
  // x = torch.randn(5, 1, 7); x.expand(3, 5, 4, 7).flip(-1): strides (0, 7, 0, -1), storage_offset 6.
  ir::Graph e =
      graph_from_text(chain("[5, 1, 7]", {{"e", "expand", "\"x\"", R"({"shape": [3, 5, 4, 7]})", "[3, 5, 4, 7]"},
                                          {"f", "flip", "\"e\"", R"({"dims": [-1]})", "[3, 5, 4, 7]"}}));
  auto f = view_of(e, "f");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->strides, (std::vector<int64_t>{0, 7, 0, -1}));
  EXPECT_EQ(f->offset, 6);
}

TEST(StridedView, ReshapeIsAViewOnlyWhereStridesAllowIt) {
  // x[:, :, 2:6] of [3, 4, 8] has strides (32, 8, 1): .reshape(12, 4) is a view (8, 1); .reshape(3, 16) copies.
  const Step slice{"s", "slice", "\"x\"", R"({"dim": 2, "start": 2, "end": 6, "step": 1})", "[3, 4, 4]"};
  ir::Graph ok =
      graph_from_text(chain("[3, 4, 8]", {slice, {"r", "reshape", "\"s\"", R"({"shape": [12, 4]})", "[12, 4]"}}));
  auto r = view_of(ok, "r");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->strides, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(r->offset, 2);
  ir::Graph no =
      graph_from_text(chain("[3, 4, 8]", {slice, {"r", "reshape", "\"s\"", R"({"shape": [3, 16]})", "[3, 16]"}}));
  EXPECT_FALSE(view_of(no, "r"));
  // A kernel that reads the copying reshape in place is refused; the composable one is accepted.
  const std::vector<int> both{0, 1};
  EXPECT_TRUE(kernels::reads_through_views(ok, both));
  EXPECT_FALSE(kernels::reads_through_views(no, both));
}

TEST(StridedView, ReductionLayoutFollowsTheViewsStrides) {
  // The unfold above, reduced over its window: 2,095,104 rows of 16 contiguous elements, each 8 apart; the
  // three kept dims merge into one only where memory allows (1023 windows * 8 != 8192: they do not).
  auto l = codegen::reduce::make_layout({32, 64, 1023, 16}, {524288, 8192, 8, 1}, {3});
  EXPECT_TRUE(l.rows);
  EXPECT_TRUE(l.contiguous_rows());
  EXPECT_EQ(l.N, 16);
  EXPECT_EQ(l.M, 32 * 64 * 1023);
  EXPECT_EQ(l.kept_sizes, (std::vector<int64_t>{2048, 1023}));
  EXPECT_EQ(l.kept_strides, (std::vector<int64_t>{8192, 8}));
  // A transposed view reduced over its last dim walks memory along the kept dim: the column kernel.
  auto t = codegen::reduce::make_layout({8, 96, 64}, {6144, 1, 96}, {2});
  EXPECT_FALSE(t.rows);
  // The contiguous overload is the same as strides of a contiguous tensor.
  auto a = codegen::reduce::make_layout({4, 5, 6}, {0, 2});
  auto b = codegen::reduce::make_layout({4, 5, 6}, {30, 6, 1}, {0, 2});
  EXPECT_EQ(a.kept_sizes, b.kept_sizes);
  EXPECT_EQ(a.red_sizes, b.red_sizes);
  EXPECT_EQ(a.red_strides, b.red_strides);
  EXPECT_EQ(a.rows, b.rows);
}

TEST(StridedView, OffsetExpressionHasTheViewsStrides) {
  ir::StridedView v;
  v.shape = {4, 6};
  v.strides = {2, 10};
  v.offset = 181;
  const std::string e = codegen::strided_offset(v, {4, 6}, "i");
  EXPECT_NE(e.find("181LL"), std::string::npos) << e;
  EXPECT_NE(e.find("* 10LL"), std::string::npos) << e;
  EXPECT_NE(e.find("* 2LL"), std::string::npos) << e;
  // Broadcast over a leading dim of 3: that dim adds nothing.
  const std::string b = codegen::strided_offset(v, {3, 4, 6}, "i");
  EXPECT_NE(b.find("% 4u) * 2LL"), std::string::npos) << b;
}

TEST(StridedView, OnlyCoalescedViewsJoinAnElementwiseChain) {
  // y = x.transpose(1, 2) + 1 moves the innermost dim (refused: the tiled permute reads it); x[:, 1:] + 1 does not.
  ir::Graph t =
      graph_from_text(chain("[8, 64, 96]", {{"p", "permute", "\"x\"", R"({"dims": [0, 2, 1]})", "[8, 96, 64]"},
                                            {"y", "add", "\"p\"", R"({"scalar": 1.0})", "[8, 96, 64]"}}));
  EXPECT_FALSE(kernels::views_read_coalesced(t, {0, 1}));
  auto planned_t = skills::plan_default(t);
  ASSERT_TRUE(planned_t.is_ok());
  EXPECT_EQ(planned_t->kernels.size(), 2u);
  ir::Graph s = graph_from_text(
      chain("[8, 64, 96]", {{"p", "slice", "\"x\"", R"({"dim": 1, "start": 1, "end": 64, "step": 1})", "[8, 63, 96]"},
                            {"y", "add", "\"p\"", R"({"scalar": 1.0})", "[8, 63, 96]"}}));
  EXPECT_TRUE(kernels::views_read_coalesced(s, {0, 1}));
  auto planned_s = skills::plan_default(s);
  ASSERT_TRUE(planned_s.is_ok());
  ASSERT_EQ(planned_s->kernels.size(), 1u);
  EXPECT_EQ(planned_s->kernels[0].nodes.size(), 2u);
}

TEST(StridedView, ASharedViewIsCopiedPerReaderSoEachReadsItInPlace) {
  // w = x.unfold(2, 4, 2) read by amax and mean: the loader gives mean its own copy, and the default plan reads
  // both in place (two reduce kernels, no gather).
  ir::Graph g = graph_from_text(
      chain("[2, 3, 64]", {{"w", "unfold", "\"x\"", R"({"dim": 2, "size": 4, "step": 2})", "[2, 3, 31, 4]"},
                           {"m", "amax", "\"w\"", R"({"dims": [3], "keepdim": false})", "[2, 3, 31]"},
                           {"a", "mean", "\"w\"", R"({"dims": [3], "keepdim": false})", "[2, 3, 31]"},
                           {"y", "sub", "\"m\", \"a\"", R"({"scalar": null, "reverse": false})", "[2, 3, 31]"}}));
  ASSERT_EQ(g.nodes().size(), 5u);
  EXPECT_NE(g.find("w_read1"), ir::kNoValue);
  EXPECT_EQ(g.users(g.find("w")).size(), 1u);
  auto planned = skills::plan_default(g);
  ASSERT_TRUE(planned.is_ok());
  for (const auto& k : planned->kernels) EXPECT_NE(k.strategy, schedule::Strategy::kGather) << k.name;
  // A view that is also a graph output is stored once and shared.
  ir::Graph kept =
      graph_from_text(chain("[2, 3, 64]",
                            {{"w", "unfold", "\"x\"", R"({"dim": 2, "size": 4, "step": 2})", "[2, 3, 31, 4]"},
                             {"m", "amax", "\"w\"", R"({"dims": [3], "keepdim": false})", "[2, 3, 31]"},
                             {"a", "mean", "\"w\"", R"({"dims": [3], "keepdim": false})", "[2, 3, 31]"}},
                            R"("m", "a", "w")"));
  EXPECT_EQ(kept.nodes().size(), 3u);
  // A transpose two elementwise ops read is not copied: neither could read it coalesced, and two tiled copies
  // would cost one more pass than one.
  ir::Graph t = graph_from_text(chain("[8, 64, 96]",
                                      {{"p", "permute", "\"x\"", R"({"dims": [0, 2, 1]})", "[8, 96, 64]"},
                                       {"a", "add", "\"p\"", R"({"scalar": 1.0})", "[8, 96, 64]"},
                                       {"m", "mul", "\"p\"", R"({"scalar": 2.0})", "[8, 96, 64]"}},
                                      R"("a", "m")"));
  EXPECT_EQ(t.nodes().size(), 3u);
  // The same transpose read by two reductions is copied (a reduction reads any strides).
  ir::Graph r = graph_from_text(chain("[8, 64, 96]",
                                      {{"p", "permute", "\"x\"", R"({"dims": [0, 2, 1]})", "[8, 96, 64]"},
                                       {"a", "sum", "\"p\"", R"({"dims": [2], "keepdim": false})", "[8, 96]"},
                                       {"m", "amax", "\"p\"", R"({"dims": [2], "keepdim": false})", "[8, 96]"}},
                                      R"("a", "m")"));
  EXPECT_EQ(r.nodes().size(), 4u);
}

TEST(StridedView, KernelsThatReadViewsInPlaceBuildWithNvcc) {
  // (x - x.flip(-1)) ** 2 summed over the last dim: x is both a full-shape operand (the reduction's 16-byte
  // lanes) and the flip's source; the chain then loads through its function (the lanes would hide x's pointer).
  ir::Graph g = graph_from_text(
      chain("[16, 256]", {{"f", "flip", "\"x\"", R"({"dims": [-1]})", "[16, 256]"},
                          {"d", "sub", "\"x\", \"f\"", R"({"scalar": null, "reverse": false})", "[16, 256]"},
                          {"q", "mul", "\"d\", \"d\"", R"({"scalar": null, "reverse": false})", "[16, 256]"},
                          {"y", "sum", "\"q\"", R"({"dims": [1], "keepdim": false})", "[16]"}}));
  auto s = skills::plan_default(g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_NE(code.find("255LL + (long long)"), std::string::npos) << code;  // the flip: offset 255, stride -1
  EXPECT_NE(code.find("* -1LL"), std::string::npos) << code;
  testing::expect_builds_with_nvcc(p.value(), "views-flip-lanes");
  // A slice and an unfold read in place by an elementwise chain and by three reductions of one window.
  ir::Graph u = graph_from_text(
      chain("[4, 8, 130]", {{"s", "slice", "\"x\"", R"({"dim": 2, "start": 2, "end": 130, "step": 1})", "[4, 8, 128]"},
                            {"w", "unfold", "\"s\"", R"({"dim": 2, "size": 8, "step": 4})", "[4, 8, 31, 8]"},
                            {"m", "amax", "\"w\"", R"({"dims": [3], "keepdim": false})", "[4, 8, 31]"},
                            {"a", "mean", "\"w\"", R"({"dims": [3], "keepdim": false})", "[4, 8, 31]"},
                            {"v", "var", "\"w\"", R"({"dims": [3], "correction": 0, "keepdim": false})", "[4, 8, 31]"},
                            {"d", "sub", "\"m\", \"a\"", R"({"scalar": null, "reverse": false})", "[4, 8, 31]"},
                            {"y", "mul", "\"d\", \"v\"", R"({"scalar": null, "reverse": false})", "[4, 8, 31]"}}));
  auto su = skills::plan_default(u);
  ASSERT_TRUE(su.is_ok()) << su.status().message();
  for (const auto& k : su->kernels) EXPECT_NE(k.strategy, schedule::Strategy::kGather) << k.name;
  auto pu = codegen::emit_program(u, su.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(pu.is_ok()) << pu.status().message();
  testing::expect_builds_with_nvcc(pu.value(), "views-unfold-reductions");
}

}  // namespace
}  // namespace kforge
