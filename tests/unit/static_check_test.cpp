// Static checks of CUDA sources: each rule fires where it should, comments do not count, and the
// code kforge generates passes (or the build refuses it as forbidden).
#include "sandbox/static_check.h"

#include <gtest/gtest.h>

#include "codegen/program.h"
#include "sandbox/build.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::sandbox {
namespace {

std::vector<std::string> rules_of(const std::string& code) {
  std::vector<std::string> out;
  for (const auto& f : check_cuda_source(code, "k.cu")) out.push_back(f.rule);
  return out;
}

TEST(CudaStaticCheck, EachRuleFires) {
  EXPECT_EQ(rules_of("#include <torch/extension.h>\n"), (std::vector<std::string>{"torch_header"}));
  EXPECT_EQ(rules_of("#include <ATen/ATen.h>\n"), (std::vector<std::string>{"torch_header"}));
  EXPECT_EQ(rules_of("cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);"), (std::vector<std::string>{"side_stream"}));
  EXPECT_EQ(rules_of("std::thread t([]{});"), (std::vector<std::string>{"host_thread"}));
  EXPECT_EQ(rules_of("pthread_create(&t, 0, f, 0);"), (std::vector<std::string>{"host_thread"}));
  EXPECT_EQ(rules_of("attr.accessPolicyWindow.num_bytes = 1;"), (std::vector<std::string>{"l2_persisting"}));
  EXPECT_EQ(rules_of("FILE* f = fopen(\"x\", \"r\");"), (std::vector<std::string>{"host_io"}));
  EXPECT_EQ(rules_of("std::ifstream in(\"x\");"), (std::vector<std::string>{"host_io"}));
  EXPECT_EQ(rules_of("if (getenv(\"X\")) return 1;"), (std::vector<std::string>{"environment"}));
  EXPECT_EQ(rules_of("system(\"ls\");"), (std::vector<std::string>{"process"}));
}

TEST(CudaStaticCheck, CommentsAndLookalikesDoNotCount) {
  EXPECT_TRUE(rules_of("// cudaStreamCreate(&s) would be wrong here\n/* std::thread */ int x = 0;\n").empty());
  EXPECT_TRUE(rules_of("int my_fopen_count = 0; int getenvironment = 1;").empty());
  EXPECT_TRUE(rules_of("kf_launch<<<grid, block, 0, ctx->stream>>>(a, b);").empty());
}

TEST(CudaStaticCheck, NamesTheLine) {
  auto f = check_cuda_source("int a;\n// fopen(\n\nstd::thread t;\n", "k7.cu");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 4);
  EXPECT_EQ(describe(f[0]).rfind("k7.cu:4: starts a host thread", 0), 0u) << describe(f[0]);
}

TEST(CudaStaticCheck, GeneratedProgramsPassAndAForbiddenUnitStopsTheBuild) {
  ir::Graph g = kforge::testing::graph_from_text(kforge::testing::one_node_graph("relu", {{"x", {64}}}, "{}", {64}));
  auto s = skills::plan_default(g);
  ASSERT_TRUE(s.is_ok());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok());
  for (const auto& k : p->kernels) EXPECT_TRUE(check_cuda_source(k.code, k.file_name).empty()) << k.code;
  EXPECT_TRUE(check_cuda_source(p->entry.code, "entry.cu").empty());
  auto tc = find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  codegen::Program bad = p.value();
  bad.kernels[0].code += "\nstatic int kf_peek() { return getenv(\"KFORGE_PROFILE\") != nullptr; }\n";
  auto dir = kforge::testing::temp_dir("forbidden-build");
  auto r = build_program(bad, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->outcome, "forbidden");
  EXPECT_NE(r->message.find("reads the environment"), std::string::npos) << r->message;
  EXPECT_TRUE(r->compiles.empty());  // refused before nvcc ran
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kforge::sandbox
