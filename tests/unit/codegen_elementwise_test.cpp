// Elementwise codegen: golden emitted code, broadcasting arithmetic, literals, and an nvcc build.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "base/files.h"
#include "codegen/elementwise_index.h"
#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "sandbox/build.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

const char* kGoldenDir = KFORGE_GOLDEN_DIR;

// Compares with tests/golden/<name>; KFORGE_UPDATE_GOLDEN=1 rewrites the file instead.
void expect_golden(const std::string& name, const std::string& text) {
  std::string path = std::string(kGoldenDir) + "/" + name;
  if (std::getenv("KFORGE_UPDATE_GOLDEN")) {
    ASSERT_TRUE(write_file(path, text).is_ok());
    return;
  }
  auto golden = read_file(path);
  ASSERT_TRUE(golden.is_ok()) << "missing golden file " << path << " (run with KFORGE_UPDATE_GOLDEN=1)";
  EXPECT_EQ(text, golden.value()) << "emitted code differs from " << path
                                  << "; if the change is intended, rerun with KFORGE_UPDATE_GOLDEN=1";
}

Program emit(const ir::Graph& g) {
  auto s = schedule::plan_one_kernel_per_op(g);
  auto p = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

TEST(CodegenElementwise, ReluGolden) {
  ir::Graph g = graph_from_text(one_node_graph("relu", {{"x", {4096, 393216}}}, "{}", {4096, 393216}));
  Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  expect_golden("relu_kernel.cu", p.kernels[0].code);
  expect_golden("relu_entry.cu", p.entry.code);
}

TEST(CodegenElementwise, VectorWalkKnob) {
  ir::Graph g = graph_from_text(one_node_graph("relu", {{"x", {1000, 1000}}}, "{}", {1000, 1000}));
  auto s = schedule::plan_one_kernel_per_op(g);
  // Default: a tile of 256 threads x 1 vector per block, no loop (250000 vectors -> 977 blocks).
  auto tiles = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# r\n"});
  ASSERT_TRUE(tiles.is_ok());
  EXPECT_NE(tiles->kernels[0].code.find("const int64_t q0 = (int64_t)blockIdx.x * blockDim.x * 1 + threadIdx.x;"),
            std::string::npos)
      << tiles->kernels[0].code;
  EXPECT_NE(tiles->kernels[0].code.find("_x4<<<977u, 256"), std::string::npos) << tiles->kernels[0].code;
  // unroll = 4: four vectors per thread (245 blocks).
  s.kernels[0].knobs[schedule::Knob::kUnroll] = 4;
  auto four = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# r\n"});
  ASSERT_TRUE(four.is_ok());
  EXPECT_NE(four->kernels[0].code.find("_x4<<<245u, 256"), std::string::npos) << four->kernels[0].code;
  // walk = 0: grid-stride loops over a capped grid; unroll = 2: two vectors per thread in flight.
  s.kernels[0].knobs[schedule::Knob::kWalk] = 0;
  s.kernels[0].knobs[schedule::Knob::kUnroll] = 2;
  auto stride = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# r\n"});
  ASSERT_TRUE(stride.is_ok());
  EXPECT_NE(stride->kernels[0].code.find("q0 += 2 * step"), std::string::npos) << stride->kernels[0].code;
  EXPECT_NE(stride->kernels[0].code.find("float4 p0[2];"), std::string::npos) << stride->kernels[0].code;
  EXPECT_NE(stride->kernels[0].code.find("_x4<<<kf_grid(125000LL, 256)"), std::string::npos) << stride->kernels[0].code;
  // Values outside the knobs' ranges are refused with what they may be.
  s.kernels[0].knobs[schedule::Knob::kWalk] = 2;
  auto bad_walk = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# r\n"});
  ASSERT_FALSE(bad_walk.is_ok());
  EXPECT_NE(bad_walk.status().message().find("the knob walk must be 0 (grid-stride) or 1 (tiles), not 2"),
            std::string::npos)
      << bad_walk.status().message();
  s.kernels[0].knobs[schedule::Knob::kWalk] = 1;
  s.kernels[0].knobs[schedule::Knob::kUnroll] = 0;
  auto bad_unroll = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# r\n"});
  ASSERT_FALSE(bad_unroll.is_ok());
  EXPECT_NE(bad_unroll.status().message().find("the knob unroll must be 1 to 8"), std::string::npos)
      << bad_unroll.status().message();
}

TEST(CodegenElementwise, BiasBroadcastGolden) {
  ir::Graph g =
      graph_from_text(one_node_graph("add", {{"x", {128, 128, 30, 30}}, {"b", {128, 1, 1}}}, "{}", {128, 128, 30, 30}));
  Program p = emit(g);
  expect_golden("bias_add_kernel.cu", p.kernels[0].code);
}

TEST(CodegenElementwise, BroadcastOffsets) {
  EXPECT_EQ(broadcast_offset({4, 5}, {4, 5}, "i"), "i");
  EXPECT_EQ(broadcast_offset({1}, {4, 5}, "i"), "0");
  // 32-bit arithmetic while every output index fits in 31 bits, 64-bit beyond.
  EXPECT_EQ(broadcast_offset({5}, {4, 5}, "i"), "((unsigned)(i) % 5u)");
  EXPECT_EQ(broadcast_offset({4, 1}, {4, 5}, "i"), "((((unsigned)(i) / 5u) % 4u) * 1u)");
  EXPECT_EQ(broadcast_offset({4, 1}, {4, 1LL << 30}, "i"), "(((i / 1073741824LL) % 4LL) * 1LL)");
  EXPECT_EQ(broadcast_offset({2, 1}, {2, (1LL << 30) - 1}, "i"), "((((unsigned)(i) / 1073741823u) % 2u) * 1u)");
  EXPECT_EQ(channel_offset({8, 3, 5}, "i"), "(((unsigned)(i) / 5u) % 3u)");
  EXPECT_EQ(channel_offset({8, 3, 1LL << 29}, "i"), "((i / 536870912LL) % 3LL)");
}

TEST(CodegenElementwise, RowInvariantOffsets) {
  // A per-channel operand of NCHW planes of 900 depends on i / 900 (and on i / 300), not on i / 4.
  EXPECT_TRUE(row_invariant_offset({64, 1, 1}, {8, 64, 30, 30}, 900));
  EXPECT_TRUE(row_invariant_offset({64, 1, 1}, {8, 64, 30, 30}, 300));
  EXPECT_FALSE(row_invariant_offset({64, 1, 1}, {8, 64, 30, 30}, 1800));
  EXPECT_FALSE(row_invariant_offset({30}, {8, 64, 30, 30}, 900));
  EXPECT_FALSE(row_invariant_offset({8, 64, 30, 30}, {8, 64, 30, 30}, 900));
  EXPECT_TRUE(row_invariant_offset({1}, {8, 64, 30, 30}, 900));
  EXPECT_TRUE(row_invariant_offset({8, 1, 1, 1}, {8, 64, 30, 30}, 900));
  EXPECT_FALSE(row_invariant_offset({64, 1, 1}, {8, 64, 30, 30}, 0));
  EXPECT_TRUE(row_invariant_offset(channel_shape({8, 64, 30, 30}), {8, 64, 30, 30}, 900));
  EXPECT_EQ(channel_shape({8, 64, 30, 30}), (ir::Shape{1, 64, 1, 1}));
}

TEST(CodegenElementwise, ScalarOperandsAndReverse) {
  ir::Graph g = graph_from_text(one_node_graph("sub", {{"x", {8}}}, R"({"scalar": 1, "reverse": true})", {8}));
  Program p = emit(g);
  EXPECT_NE(p.kernels[0].code.find("const T a = T(1.0f);"), std::string::npos) << p.kernels[0].code;
  EXPECT_NE(p.kernels[0].code.find("const T b = T(in0[i]);"), std::string::npos);
}

TEST(CodegenElementwise, ClampWithOpenSide) {
  ir::Graph g = graph_from_text(one_node_graph("clamp", {{"x", {8}}}, R"({"min": 0.0})", {8}));
  Program p = emit(g);
  EXPECT_NE(p.kernels[0].code.find("T(INFINITY)"), std::string::npos) << p.kernels[0].code;
}

TEST(CodegenElementwise, IntegerClampOpenSideIsTheTypesOwnLimit) {
  // An infinity converted to an integer is undefined behaviour: the open side is the type's lowest / highest.
  ir::Graph g = graph_from_text(one_node_graph("clamp", {{"x", {8}}}, R"({"max": 2.0})", {8}, "int64", {"int64"}));
  Program p = emit(g);
  const std::string& code = p.kernels[0].code;
  EXPECT_NE(code.find("T(-9223372036854775807LL - 1)"), std::string::npos) << code;
  EXPECT_EQ(code.find("INFINITY"), std::string::npos) << code;
}

TEST(CodegenElementwise, FloatLiteralsRoundTrip) {
  EXPECT_EQ(float_literal(0.5), "(0.5f)");
  EXPECT_EQ(float_literal(2), "(2.0f)");
  EXPECT_EQ(float_literal(0.1), "(0.100000001f)");
  EXPECT_EQ(float_literal(-1.0 / 0.0), "(-INFINITY)");
}

TEST(CodegenElementwise, TrainingDropoutIsRefusedWithAReason) {
  ir::Graph g = graph_from_text(one_node_graph("dropout", {{"x", {8}}}, R"({"p": 0.2, "training": true})", {8}));
  auto s = schedule::plan_one_kernel_per_op(g);
  auto p = emit_program(g, s, {});
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("dropout in training mode"), std::string::npos);
}

TEST(CodegenElementwise, ModelNewSubclassesTheReference) {
  ir::Graph g = graph_from_text(one_node_graph("tanh", {{"x", {2, 3}}}, "{}", {2, 3}));
  Program p = emit(g);
  EXPECT_NE(p.model_new_py.find("# reference\n"), std::string::npos);
  EXPECT_NE(p.model_new_py.find("class ModelNew(Model):"), std::string::npos);
  EXPECT_NE(p.model_new_py.find("_KF_INPUTS = [((2, 3), torch.float32)]"), std::string::npos);
  EXPECT_EQ(p.model_new_py.find("torch.tanh"), std::string::npos);
  // A strided input is copied by the library's own kernel, never by torch (.contiguous() is torch compute).
  EXPECT_NE(p.model_new_py.find("inputs[i] = _kf_dense(t)"), std::string::npos);
  EXPECT_NE(p.model_new_py.find("lib.kforge_dense_copy(dense.data_ptr(), view.data_ptr()"), std::string::npos);
  EXPECT_EQ(p.model_new_py.find(".contiguous()\n"), std::string::npos);
}

TEST(CodegenElementwise, BuildsWithNvcc) {
  ir::Graph g = graph_from_text(one_node_graph("gelu", {{"x", {64, 1000}}}, R"({"approximate": "tanh"})", {64, 1000}));
  Program p = emit(g);
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir("elementwise-build");
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->ok) << r->message;
  EXPECT_TRUE(std::filesystem::exists(dir / "lib.so"));
  // The resource report of ptxas is parsed for every kernel.
  bool found = false;
  for (const auto& c : r->compiles) {
    for (const auto& ru : c.resources)
      found = found || (ru.registers > 0 && ru.kernel.find("k0_gelu") != std::string::npos);
  }
  EXPECT_TRUE(found);
  // A second build of the same program is served from the cache.
  auto again =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->cache_hits, static_cast<int>(again->compiles.size()));
  EXPECT_TRUE(again->link_cached);
  // A cached library needs no objects (a staged cache carries libraries without them): nothing
  // compiles again, and the resource report still comes from the kept compile logs.
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache" / "obj"))
    if (e.path().extension() == ".o") std::filesystem::remove(e.path());
  auto without_objects =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(without_objects.is_ok());
  EXPECT_TRUE(without_objects->ok) << without_objects->message;
  EXPECT_EQ(without_objects->cache_hits, static_cast<int>(without_objects->compiles.size()));
  EXPECT_TRUE(without_objects->link_cached);
  bool resources_kept = false;
  for (const auto& c : without_objects->compiles) resources_kept = resources_kept || !c.resources.empty();
  EXPECT_TRUE(resources_kept);
  std::filesystem::remove_all(dir);
}

TEST(CodegenElementwise, CompileErrorIsData) {
  ir::Graph g = graph_from_text(one_node_graph("relu", {{"x", {8}}}, "{}", {8}));
  Program p = emit(g);
  p.kernels[0].code += "\nthis is not C++;\n";
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir("compile-error");
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->outcome, "compile_error");
  EXPECT_NE(r->message.find("k0_relu.cu"), std::string::npos);
  EXPECT_NE(r->message.find("error"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CostModel, ReluIsMemoryBound) {
  ir::Graph g = graph_from_text(one_node_graph("relu", {{"x", {4096, 393216}}}, "{}", {4096, 393216}));
  auto s = schedule::plan_one_kernel_per_op(g);
  auto c = costmodel::program_cost(g, s);
  ASSERT_EQ(c.kernels.size(), 1u);
  EXPECT_EQ(c.kernels[0].bound, "memory");
  double bytes = 2.0 * 4096 * 393216 * 4;
  EXPECT_DOUBLE_EQ(c.kernels[0].bytes, bytes);
  EXPECT_NEAR(c.seconds, bytes / 4.2e12 + 2.5e-6, 1e-9);
}

TEST(CostModel, GemmIsComputeBound) {
  ir::Graph g =
      graph_from_text(one_node_graph("matmul", {{"a", {4096, 4096}}, {"b", {4096, 4096}}}, "{}", {4096, 4096}));
  auto s = schedule::plan_one_kernel_per_op(g);
  auto c = costmodel::program_cost(g, s);
  EXPECT_EQ(c.kernels[0].bound, "compute");
  EXPECT_NEAR(c.kernels[0].flops, 2.0 * 4096.0 * 4096.0 * 4096.0, 1.0);
}

}  // namespace
}  // namespace kforge::codegen
