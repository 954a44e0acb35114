// Kernels that compute the same function of other tensors share one source (built once); the entry point
// passes each call its own operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "base/files.h"
#include "base/subprocess.h"
#include "codegen_test_graphs.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"
#include "skills/planner.h"
#include "test_util.h"

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
    if (a == 0) {
      EXPECT_EQ(b, 1) << "slot " << i << ": x in the first call is y in the second";
    } else if (a == 3) {
      EXPECT_EQ(b, 3) << "slot " << i << ": both read w";
    } else if (a == 4) {
      EXPECT_EQ(b, 5) << "slot " << i << ": each writes its own result";
    }
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

TEST(CodegenProgramChunks, ManyKernelsBuildInFewNvccRunsWithARecordPerKernel) {
  // 24 relus of 24 shapes: 24 distinct sources, compiled in chunks (about 8 a chunk, at most 16), each kernel
  // still reported with its own file and its own registers; the library links and holds every kernel.
  std::vector<In> inputs;
  std::vector<Op> ops;
  std::vector<std::string> outs;
  for (int i = 0; i < 24; ++i) {
    inputs.push_back({"x" + std::to_string(i), {i + 1, 32}});
    ops.push_back({"relu", {"x" + std::to_string(i)}});
    outs.push_back("v" + std::to_string(i));
  }
  Program p = emit(make_graph(inputs, ops, outs));
  ASSERT_EQ(p.kernels.size(), 24u);
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir("chunks");
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_TRUE(r->ok) << r->message;
  size_t chunks = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "kernels"))
    chunks += e.path().filename().string().rfind("chunk_", 0) == 0;
  EXPECT_GE(chunks, 2u);   // at most 16 kernels a chunk
  EXPECT_LE(chunks, 12u);  // far fewer nvcc runs than kernels
  ASSERT_EQ(r->compiles.size(), p.kernels.size() + 1 + codegen::runtime_sources(p.libraries).size());
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const auto& rec = r->compiles[i];
    EXPECT_EQ(rec.file, p.kernels[i].file_name);
    EXPECT_FALSE(rec.resources.empty()) << rec.file << ": its own __global__ functions' registers";
    for (const auto& ru : rec.resources)  // its own functions (scalar and vector forms), no other kernel's
      EXPECT_NE(ru.kernel.find(p.kernels[i].name + "_kernel"), std::string::npos) << rec.file << ": " << ru.kernel;
  }
  // The library exports every kernel's C symbol (the entry point calls them by name).
  auto nm = run_process({"nm", "-D", "--defined-only", (dir / "lib.so").string()}, {.timeout_seconds = 30});
  ASSERT_TRUE(nm.is_ok() && nm->ok());
  for (const auto& k : p.kernels) EXPECT_NE(nm->output.find(" T " + k.name + "\n"), std::string::npos) << k.name;
  std::filesystem::remove_all(dir);
}

TEST(CodegenProgramChunks, BuildsSideBySideShareTheProcessNvccLimit) {
  // bench builds problems side by side, each with all its jobs, under one process-wide nvcc limit: two builds
  // on two threads under a limit of one both finish (the slot is handed on, never held across a wait).
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  sandbox::set_process_nvcc_limit(1);
  std::vector<Program> programs;
  for (int n : {3, 5}) {
    std::vector<In> inputs;
    std::vector<Op> ops;
    for (int i = 0; i < n; ++i) {
      inputs.push_back({"x" + std::to_string(i), {n, i + 2}});
      ops.push_back({"sigmoid", {"x" + std::to_string(i)}});
    }
    programs.push_back(emit(make_graph(inputs, ops)));
  }
  auto dir = kforge::testing::temp_dir("nvcc_limit");
  std::vector<StatusOr<sandbox::BuildResult>> results(programs.size(), internal_error("not built"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < programs.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = sandbox::build_program(
          programs[i], tc.value(),
          {.out_dir = dir / std::to_string(i), .library_name = "lib.so", .cache_dir = dir / "cache", .jobs = 4});
    });
  }
  for (auto& t : threads) t.join();
  sandbox::set_process_nvcc_limit(0);
  for (const auto& r : results) {
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_TRUE(r->ok) << r->message;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kforge::codegen::testing
