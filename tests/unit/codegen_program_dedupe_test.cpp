// Kernels that compute the same function of other tensors share one source (built once); the entry point
// passes each call its own operands.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen_test_graphs.h"
#include "skills/planner.h"

namespace kforge::codegen::testing {
namespace {

TEST(CodegenProgramDedupe, SameOpOnSameShapesIsOneSourceCalledTwice) {
  // x W^T and y W^T of the same shapes share one source; z (another shape) has its own. (Generated
  // elementwise kernels still name their registers after graph values, so they do not share yet.)
  Program p =
      emit(make_graph({{"x", {4, 8}}, {"y", {4, 8}}, {"z", {3, 8}}, {"w", {16, 8}}},
                      {{"linear", {"x", "w"}}, {"linear", {"y", "w"}}, {"linear", {"z", "w"}}}, {"v0", "v1", "v2"}));
  ASSERT_EQ(p.calls.size(), 3u);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.calls[0].function, p.calls[0].kernel);
  EXPECT_EQ(p.calls[1].function, p.calls[0].kernel);  // y W^T runs x W^T's source
  EXPECT_EQ(p.calls[2].function, p.calls[2].kernel);  // another shape: its own
  // Each call passes its own tensors, in the shared source's slot order.
  ASSERT_EQ(p.calls[0].operands.size(), p.calls[1].operands.size());
  for (ir::ValueIndex v : {0, 3, 4})
    EXPECT_NE(std::find(p.calls[0].operands.begin(), p.calls[0].operands.end(), v), p.calls[0].operands.end()) << v;
  for (size_t i = 0; i < p.calls[0].operands.size(); ++i) {
    const auto a = p.calls[0].operands[i], b = p.calls[1].operands[i];
    if (a == 0) EXPECT_EQ(b, 1) << "slot " << i << ": x in the first call is y in the second";
    if (a == 3) EXPECT_EQ(b, 3) << "slot " << i << ": both read w";
    if (a == 4) EXPECT_EQ(b, 5) << "slot " << i << ": each writes its own result";
  }
  EXPECT_EQ(p.manifest["kernels"].size(), 3u);
  EXPECT_EQ(p.manifest["functions"][1], p.calls[0].kernel);
  // Three calls: kforge_forward hands kf_run_kernels to the CUDA graph runtime with every bufs slot as key.
  EXPECT_NE(p.entry.code.find("return kf_graph_forward(&ctx, bufs, 7, kf_run_kernels);"), std::string::npos)
      << p.entry.code;
  EXPECT_NE(p.entry.code.find("void* bufs[7] = {};"), std::string::npos) << p.entry.code;
  kforge::testing::expect_builds_with_nvcc(p, "dedupe");
}

TEST(CodegenProgramDedupe, OneKernelRunsWithoutAGraph) {
  // A graph launch costs about what one kernel launch does: a one-kernel program launches it directly.
  Program p = emit(make_graph({{"x", {4, 8}}, {"w", {16, 8}}}, {{"linear", {"x", "w"}}}, {}));
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.entry.code.find("kf_graph_forward"), std::string::npos) << p.entry.code;
  EXPECT_NE(p.entry.code.find("return kf_run_kernels(&ctx, bufs);"), std::string::npos) << p.entry.code;
}

TEST(CodegenProgramDedupe, GeneratedChainsShareUpToTheirValueNumberedLocals) {
  // sigmoid(x) * x and sigmoid(y) * y, fused: the two chains differ only in registers named after graph values.
  ir::Graph g = make_graph({{"x", {64}}, {"y", {64}}, {"z", {64}}},
                           {{"sigmoid", {"x"}},
                            {"mul", {"v0", "x"}},
                            {"sigmoid", {"y"}},
                            {"mul", {"v2", "y"}},
                            {"sigmoid", {"z"}},
                            {"add", {"v4", "z"}}},
                           {"v1", "v3", "v5"});
  auto planned = skills::plan_default(g, {});
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  ASSERT_EQ(planned->kernels.size(), 3u);
  auto p = emit_program(g, planned.value(), {.library_file = "lib.so", .reference_source = "# reference\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->calls.size(), 3u);
  EXPECT_EQ(p->kernels.size(), 2u);  // the add chain computes something else
  EXPECT_EQ(p->calls[1].function, p->calls[0].kernel);
  EXPECT_EQ(p->calls[2].function, p->calls[2].kernel);
  kforge::testing::expect_builds_with_nvcc(p.value(), "dedupe_chains");
}

TEST(CodegenProgramDedupe, KernelCodeIndexesItsOwnOperands) {
  // The add reads values 2 and 0 of the graph: its code names slots 0 and 1, the output slot 2.
  Program p = emit(make_graph({{"a", {16}}, {"b", {16}}, {"c", {16}}}, {{"add", {"c", "a"}}}));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].operands, (std::vector<ir::ValueIndex>{2, 0, 3}));
  EXPECT_EQ(p.kernels[0].code.find("bufs[3]"), std::string::npos) << p.kernels[0].code;
  EXPECT_NE(p.kernels[0].code.find("bufs[2]"), std::string::npos) << p.kernels[0].code;
}

}  // namespace
}  // namespace kforge::codegen::testing
