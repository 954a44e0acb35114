// reduce_prologue: where it is legal, the schedule it makes, the code (the chain computed where the
// reduction loads), the cost model's view, and an nvcc build. Numerics: the GPU bench verifies every
// KernelBench problem it applies to (RMSNorm, L1Norm, MSELoss, HingeLoss, ...).
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"
#include "skills/planner.h"
#include "skills/reduce_prologue.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [8, 16] -> sq = x * x -> `reduce_op` over dim 1 -> y [8]; `returned` also returns sq.
std::string sum_of_squares(const std::string& reduce_op, bool returned, int cols = 16) {
  const std::string shape = "[8, " + std::to_string(cols) + "]";
  std::string attrs = reduce_op == "argmax" ? R"({"dim": 1, "keepdim": false})" : R"({"dims": [1], "keepdim": false})";
  std::string out_dtype = reduce_op == "argmax" ? "int64" : "float32";
  return R"({"format": "kforge.graph/1", "name": "sq",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape + R"(, "dtype": "float32"}],
    "params": [],
    "nodes": [
      {"id": "sq", "op": "mul", "inputs": ["x", "x"], "attrs": {"scalar": null, "reverse": false},
       "shape": )" +
         shape + R"(, "dtype": "float32"},
      {"id": "y", "op": ")" +
         reduce_op + R"(", "inputs": ["sq"], "attrs": )" + attrs + R"(, "shape": [8], "dtype": ")" + out_dtype +
         R"("}],
    "outputs": ["y")" +
         (returned ? ", \"sq\"" : "") + "]}";
}

TEST(ReducePrologue, SitesAndLegality) {
  ir::Graph g = graph_from_text(sum_of_squares("mean", false));
  auto first = schedule::plan_one_kernel_per_op(g, {});
  auto sites = reduce_prologue_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1}));
  auto s = reduce_prologue(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(s->kernels[0].strategy, schedule::Strategy::kReduce);
  EXPECT_EQ(s->kernels[0].nodes.size(), 2u);
  EXPECT_TRUE(is_reduce_prologue(g, s->kernels[0]));
  // A stored chain result (returned too) stays its own kernel.
  ir::Graph returned = graph_from_text(sum_of_squares("mean", true));
  auto first2 = schedule::plan_one_kernel_per_op(returned, {});
  EXPECT_TRUE(reduce_prologue_sites(returned, first2).empty());
  auto bad = reduce_prologue(returned, first2, Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("graph output"), std::string::npos) << bad.status().message();
  // argmax is no reduce-family kernel: no site.
  ir::Graph arg = graph_from_text(sum_of_squares("argmax", false));
  EXPECT_TRUE(reduce_prologue_sites(arg, schedule::plan_one_kernel_per_op(arg, {})).empty());
  // The default planner applies it, and --disable-skill leaves it out.
  auto planned = plan_default(g);
  ASSERT_TRUE(planned.is_ok());
  EXPECT_EQ(planned->kernels.size(), 1u);
  auto off = plan_default(g, {.disabled = {"reduce_prologue"}});
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(off->kernels.size(), 2u);
}

TEST(ReducePrologue, TheChainIsComputedWhereTheReductionLoadsAndItBuilds) {
  ir::Graph g = graph_from_text(sum_of_squares("sum", false));
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "__device__ __forceinline__ float k1_sum_prologue(long long i, const float* __restrict__ in0)"))
      << code;
  EXPECT_TRUE(has(code, "r1 = (float)((a * b));")) << code;
  EXPECT_TRUE(has(code, "#define k1_sum_r_LOAD(off) ((float)k1_sum_prologue(off, in0))")) << code;
  // sq never touches memory.
  EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("sq"))].storage, codegen::Storage::kRegister);
  EXPECT_EQ(p->buffers.scratch_bytes, 0u);
  // Traffic: x read once, y written once.
  auto cost = costmodel::program_cost(g, s.value());
  EXPECT_DOUBLE_EQ(cost.kernels[0].bytes, (8 * 16 + 8) * 4.0);
  kforge::testing::expect_builds_with_nvcc(p.value(), "reduce-prologue-build");
}

// a [8, 4096] - b (shape `b_shape`) -> squared -> mean over dim 1 (MSE's shape in the graph).
std::string mean_squared_difference(const std::string& b_shape) {
  return R"({"format": "kforge.graph/1", "name": "msd",
    "inputs": [{"id": "a", "name": "a", "shape": [8, 4096], "dtype": "float32"},
               {"id": "b", "name": "b", "shape": )" +
         b_shape + R"(, "dtype": "float32"}],
    "params": [],
    "nodes": [
      {"id": "d", "op": "sub", "inputs": ["a", "b"], "attrs": {"scalar": null, "reverse": false},
       "shape": [8, 4096], "dtype": "float32"},
      {"id": "sq", "op": "mul", "inputs": ["d", "d"], "attrs": {"scalar": null, "reverse": false},
       "shape": [8, 4096], "dtype": "float32"},
      {"id": "y", "op": "mean", "inputs": ["sq"], "attrs": {"dims": [1], "keepdim": false}, "shape": [8],
       "dtype": "float32"}],
    "outputs": ["y"]})";
}

TEST(ReducePrologue, FullShapeFloatOperandsAreLoadedSixteenBytesAtATime) {
  // One operand (x * x): its lanes go through the prologue.
  ir::Graph one = graph_from_text(sum_of_squares("sum", false, 4096));
  auto p1 =
      codegen::emit_program(one, plan_default(one).value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p1.is_ok()) << p1.status().message();
  const std::string& c1 = p1->kernels[0].code;
  EXPECT_TRUE(has(c1, "__device__ __forceinline__ float k1_sum_prologue_lanes(const float a0)")) << c1;
  EXPECT_TRUE(has(
      c1,
      "float v0; { const long long jl = jq + 0; (void)jl; const float V0 = w0.x; v0 = k1_sum_prologue_lanes(V0); }"))
      << c1;
  EXPECT_TRUE(has(c1, "a.s += (double)((v0 + v1) + (v2 + v3));")) << c1;
  EXPECT_TRUE(has(c1, "k1_sum_r_rows<true><<<")) << c1;
  // Two same-shape operands: both loaded as vectors, both alignments checked.
  ir::Graph two = graph_from_text(mean_squared_difference("[8, 4096]"));
  auto s2 = plan_default(two);
  ASSERT_TRUE(s2.is_ok()) << s2.status().message();
  auto p2 = codegen::emit_program(two, s2.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p2.is_ok()) << p2.status().message();
  ASSERT_EQ(p2->kernels.size(), 1u);
  const std::string& c2 = p2->kernels[0].code;
  EXPECT_TRUE(has(c2, "_prologue_lanes(const float a0, const float a1)")) << c2;
  EXPECT_TRUE(has(c2, "_prologue_lanes(V0, V1)")) << c2;
  // The two inputs (values 0 and 1) are the kernel's operand slots 2 and 3.
  ASSERT_GE(p2->kernels[0].operands.size(), 4u);
  EXPECT_EQ(p2->kernels[0].operands[2], 0);
  EXPECT_EQ(p2->kernels[0].operands[3], 1);
  EXPECT_TRUE(has(c2,
                  "(reinterpret_cast<uintptr_t>(((const float*)bufs[2])) & 15) == 0 && "
                  "(reinterpret_cast<uintptr_t>(((const float*)bufs[3])) & 15) == 0"))
      << c2;
  // The offset form stays for unaligned pointers.
  EXPECT_TRUE(has(c2, "_rows<false><<<")) << c2;
  kforge::testing::expect_builds_with_nvcc(p2.value(), "reduce-prologue-lanes-build");
  // A broadcast operand (100_HingeLoss's per-column target): the full-shape operand still comes in
  // 16-byte lanes, the broadcast one is read at the lane's element offset, base + jl.
  ir::Graph bcast = graph_from_text(mean_squared_difference("[4096]"));
  auto p3 =
      codegen::emit_program(bcast, plan_default(bcast).value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p3.is_ok()) << p3.status().message();
  const std::string& c3 = p3->kernels[0].code;
  EXPECT_TRUE(has(c3, "_prologue_lanes(const long long i, const float a0, const float* __restrict__ in1)")) << c3;
  EXPECT_TRUE(has(c3, "in1[((unsigned)(i) % 4096u)]")) << c3;
  EXPECT_TRUE(has(c3, "const long long jl = jq + 3; (void)jl; const float V0 = w0.w; v3 = ")) << c3;
  EXPECT_TRUE(has(c3, "_prologue_lanes(base + jl, V0, in1)")) << c3;
  EXPECT_TRUE(has(c3, "_rows<false><<<")) << c3;  // the offset form for unaligned pointers
  kforge::testing::expect_builds_with_nvcc(p3.value(), "reduce-prologue-broadcast-lanes-build");
}

}  // namespace
}  // namespace kforge::skills
