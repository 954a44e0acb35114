// `kforge export --format kernelbench`: the exported file's shape (load_inline, ModelNew(Model), the
// interface tables), upstream's static rules, refusals, and an nvcc build of the merged CUDA unit.
#include "codegen/export_kernelbench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "base/files.h"
#include "base/subprocess.h"
#include "sandbox/toolchain.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

StatusOr<std::filesystem::path> runtime_dir() {
  KF_ASSIGN_OR_RETURN(std::filesystem::path home, kforge_home());
  return home / "src/codegen/runtime";
}

using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

constexpr const char* kReference =
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n\n"
    "    def forward(self, x):\n        return torch.relu(x)\n\n\n"
    "def get_inputs():\n    return [torch.rand(4, 8)]\n\n\ndef get_init_inputs():\n    return []\n";

bool has(const std::string& text, const std::string& s) {
  return text.find(s) != std::string::npos;
}

bool has_word(const std::string& text, const std::string& word) {
  return std::regex_search(text, std::regex("\\b" + word + "\\b"));
}

Program emit(const ir::Graph& g) {
  auto s = schedule::plan_one_kernel_per_op(g);
  auto p = emit_program(g, s, {.library_file = "", .reference_source = kReference});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

std::string export_text(const ir::Graph& g, const std::string& reference = kReference) {
  auto text = export_kernelbench(g, emit(g), reference);
  EXPECT_TRUE(text.is_ok()) << text.status().message();
  return text.is_ok() ? text.value() : "";
}

// What every exported file must satisfy to get past upstream's checker, comments included.
void expect_kernelbench_file(const std::string& text) {
  EXPECT_TRUE(has(text, "load_inline(")) << text;
  EXPECT_TRUE(has(text, "__global__"));
  EXPECT_TRUE(has(text, "\nclass ModelNew(Model):\n"));
  EXPECT_TRUE(has(text, "\nclass Model(nn.Module):\n"));  // the reference comes first, unchanged
  EXPECT_LT(text.find(kReference), text.find("class ModelNew"));
  for (const char* w : {"pass", "try", "except", "threading", "multiprocessing"}) EXPECT_FALSE(has_word(text, w)) << w;
  EXPECT_TRUE(kernelbench_static_violations(text).empty()) << kernelbench_static_violations(text).front();
  EXPECT_TRUE(has(text, "\"-gencode\", \"arch=compute_90a,code=sm_90a\""));
  EXPECT_TRUE(has(text, "functions=[\"kforge_run\", \"kforge_dense\"]"));
  // forward allocates and calls the extension; no torch compute op.
  const std::string forward = text.substr(text.find("    def forward(self, *args):"));
  EXPECT_TRUE(has(forward, "_kf_extension.kforge_run(inputs, params, outputs, scratch)"));
  for (const char* op : {"torch.relu", "torch.matmul", "torch.nn.functional", "F.", "torch.add", ".sum("})
    EXPECT_FALSE(has(forward, op)) << op;
}

const char* kElementwiseGraph = R"({
  "format": "kforge.graph/1", "name": "t_elementwise",
  "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"}],
  "params": [{"id": "b", "path": "bias", "kind": "parameter", "shape": [8], "dtype": "float32"}],
  "nodes": [
    {"id": "r", "op": "relu", "inputs": ["x"], "attrs": {}, "shape": [4, 8], "dtype": "float32"},
    {"id": "y", "op": "add", "inputs": ["r", "b"], "attrs": {}, "shape": [4, 8], "dtype": "float32"}
  ],
  "outputs": ["y"],
  "forward_args": [{"name": "x", "input": "x"}, {"name": "scale", "constant": 2.5}]
})";

TEST(ExportKernelbench, ElementwiseProgram) {
  ir::Graph g = graph_from_text(kElementwiseGraph);
  const std::string text = export_text(g);
  expect_kernelbench_file(text);
  EXPECT_TRUE(has(text, "_KF_ARGS = [(0, \"x\", None), (None, \"scale\", 2.5)]")) << text;
  EXPECT_TRUE(has(text, "_KF_PARAMS = [(\"bias\", False, (8, ), torch.float32)]"));
  EXPECT_TRUE(has(text, "_KF_INPUTS = [((4, 8), torch.float32)]"));
  EXPECT_TRUE(has(text, "_KF_OUTPUTS = [((4, 8), torch.float32)]"));
  EXPECT_TRUE(has(text, "extra_ldflags=[],"));
  // Each unit in its own namespace; the runtime header once, its include of itself gone.
  EXPECT_TRUE(has(text, "namespace kforge_unit_0_k0_relu {"));
  EXPECT_TRUE(has(text, "namespace kforge_unit_1_k1_add {"));
  EXPECT_TRUE(has(text, "namespace kforge_unit_2_entry {"));
  EXPECT_TRUE(has(text, "namespace kforge_unit_3_kforge_runtime {"));
  EXPECT_FALSE(has(text, "#include \"kforge_runtime.cuh\""));
  EXPECT_FALSE(has(text, "#pragma once"));
  EXPECT_EQ(text.find("struct KfContext {"), text.rfind("struct KfContext {"));
  EXPECT_TRUE(has(text, "extern \"C\" int kforge_forward("));
  EXPECT_TRUE(has(text, "at::cuda::getCurrentCUDAStream()"));
}

TEST(ExportKernelbench, CublasGemmWithBias) {
  ir::Graph g = graph_from_text(R"({
    "format": "kforge.graph/1", "name": "t_linear",
    "inputs": [{"id": "x", "name": "x", "shape": [16, 64], "dtype": "float32"}],
    "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [32, 64], "dtype": "float32"},
               {"id": "wb", "path": "fc.bias", "kind": "parameter", "shape": [32], "dtype": "float32"}],
    "nodes": [
      {"id": "l", "op": "linear", "inputs": ["x", "w", "wb"], "attrs": {}, "shape": [16, 32], "dtype": "float32"},
      {"id": "y", "op": "relu", "inputs": ["l"], "attrs": {}, "shape": [16, 32], "dtype": "float32"}
    ],
    "outputs": ["y"]
  })");
  const std::string text = export_text(g);
  expect_kernelbench_file(text);
  EXPECT_TRUE(has(text, "extra_ldflags=[\"-lcublas\"],"));
  EXPECT_TRUE(has(text, "#include <cublas_v2.h>"));
  EXPECT_TRUE(has(text,
                  "_KF_PARAMS = [(\"fc.weight\", False, (32, 64), torch.float32), (\"fc.bias\", False, (32, ), "
                  "torch.float32)]"));
  // The include is hoisted above every unit; the macro the unit defines is undefined after it.
  EXPECT_LT(text.find("#include <cublas_v2.h>"), text.find("namespace kforge_unit_0"));
  EXPECT_TRUE(has(text, "}  // namespace kforge_unit_0_k0_linear\n#undef KF_CUBLAS\n"));
}

// A complex buffer is its real view in the graph; ModelNew checks it (and passes its memory) as the model holds it.
TEST(ExportKernelbench, ComplexBufferIsCheckedAsTheModelHoldsIt) {
  ir::Graph g = graph_from_text(R"({
    "format": "kforge.graph/1", "name": "t_complex",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 8, 2], "dtype": "float32"}],
    "params": [{"id": "f", "path": "freqs", "kind": "buffer", "shape": [4, 8, 2], "dtype": "float32", "complex": true}],
    "nodes": [{"id": "y", "op": "mul", "inputs": ["x", "f"], "attrs": {}, "shape": [4, 8, 2], "dtype": "float32"}],
    "outputs": ["y"]
  })");
  EXPECT_TRUE(g.params()[0].complex_view);
  const std::string text = export_text(g);
  expect_kernelbench_file(text);
  EXPECT_TRUE(has(text, "_KF_PARAMS = [(\"freqs\", True, (4, 8), torch.complex64)]")) << text;
}

TEST(ExportKernelbench, CudnnConvWithRelu) {
  ir::Graph g = graph_from_text(R"({
    "format": "kforge.graph/1", "name": "t_conv",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 4, 16, 16], "dtype": "float32"}],
    "params": [{"id": "cw", "path": "conv.weight", "kind": "parameter", "shape": [8, 4, 3, 3], "dtype": "float32"},
               {"id": "cb", "path": "conv.bias", "kind": "parameter", "shape": [8], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "cw", "cb"],
       "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1},
       "shape": [2, 8, 16, 16], "dtype": "float32"},
      {"id": "y", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": [2, 8, 16, 16], "dtype": "float32"}
    ],
    "outputs": ["y"]
  })");
  Program p = emit(g);
  const std::string text = export_text(g);
  expect_kernelbench_file(text);
  if (std::find(p.libraries.begin(), p.libraries.end(), "cudnn") != p.libraries.end()) {
    EXPECT_TRUE(has(text, "\"-lcudnn\"")) << text;
    EXPECT_TRUE(has(text, "#include <cudnn.h>"));
  }
}

TEST(ExportKernelbench, RefusesAProgramWithoutAKernelOfItsOwn) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {64, 128}}, {"b", {128, 96}}}, "{}", {64, 96}));
  auto text = export_kernelbench(g, emit(g), kReference);
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(text.status().message(), "__global__")) << text.status().message();
  EXPECT_TRUE(has(text.status().message(), "k0_matmul"));
}

TEST(ExportKernelbench, RefusesAProblemSourceThatBreaksTheStrictRules) {
  ir::Graph g = graph_from_text(kElementwiseGraph);
  std::string reference = kReference;
  reference.insert(reference.find("        return"), "        \"\"\"Forward pass, computing relu.\"\"\"\n");
  auto text = export_kernelbench(g, emit(g), reference);
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(text.status().message(), "'pass'")) << text.status().message();
  EXPECT_TRUE(has(text.status().message(), "line 10")) << text.status().message();
}

TEST(ExportKernelbench, AcceptsForbiddenWordsInProblemComments) {
  // Upstream cuts `#` comments before it looks; so does the check of the reference.
  ir::Graph g = graph_from_text(kElementwiseGraph);
  std::string reference = kReference;
  reference.insert(reference.find("        return"), "        # one pass, all dims except batch\n");
  auto text = export_kernelbench(g, emit(g), reference);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_TRUE(has(text.value(), "# one pass, all dims except batch"));
}

TEST(ExportKernelbench, StaticRulesFollowUpstream) {
  const std::string ok = "x = load_inline()\ns = '''__global__ void k() {}'''\n";
  EXPECT_TRUE(kernelbench_static_violations(ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("try:\n    x = 1\n" + ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("def f():\n    pass\n" + ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("import threading\n" + ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("class Lazy(torch.Tensor):\n    x = 1\n" + ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("torch.cuda.synchronize = None\n" + ok).empty());
  EXPECT_TRUE(kernelbench_static_violations("x = 1  # pass\n" + ok).empty());
  EXPECT_TRUE(kernelbench_static_violations("bypass = passed = 1\n" + ok).empty());
  EXPECT_FALSE(kernelbench_static_violations("x = 1\n").empty());                       // no kernel, no load_inline
  EXPECT_FALSE(kernelbench_static_violations("// __global__\nload_inline\n").empty());  // commented out
}

TEST(ExportKernelbench, CommentsWithForbiddenWordsAreStrippedFromUnits) {
  ir::Graph g = graph_from_text(kElementwiseGraph);
  Program p = emit(g);
  p.kernels[0].code += "// one pass; try it, except on Sundays\n/* pass */\nstatic const char* kf_msg = \"a // b\";\n";
  auto dir = runtime_dir();
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  auto cuda = kernelbench_cuda_source(p, dir.value());
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().message();
  EXPECT_FALSE(has_word(cuda.value(), "pass"));
  EXPECT_FALSE(has_word(cuda.value(), "except"));
  EXPECT_TRUE(has(cuda.value(), "static const char* kf_msg = \"a // b\";"));
  EXPECT_TRUE(has(cuda.value(), "__global__"));
}

// The merged unit of a program with repeated preludes (two reductions), templates (softmax), fp16
// conversions, cuBLAS and cuDNN, compiled as load_inline would (torch's half macros included), then
// linked: every kernel entry and the C ABI come out defined with C linkage.
TEST(ExportKernelbench, MergedUnitBuildsWithNvcc) {
  ir::Graph g = graph_from_text(R"({
    "format": "kforge.graph/1", "name": "t_merged",
    "inputs": [{"id": "x", "name": "x", "shape": [16, 64], "dtype": "float32"},
               {"id": "img", "name": "img", "shape": [2, 4, 16, 16], "dtype": "float32"}],
    "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [32, 64], "dtype": "float32"},
               {"id": "wb", "path": "fc.bias", "kind": "parameter", "shape": [32], "dtype": "float32"},
               {"id": "cw", "path": "conv.weight", "kind": "parameter", "shape": [8, 4, 3, 3], "dtype": "float32"}],
    "nodes": [
      {"id": "l", "op": "linear", "inputs": ["x", "w", "wb"], "attrs": {}, "shape": [16, 32], "dtype": "float32"},
      {"id": "r", "op": "relu", "inputs": ["l"], "attrs": {}, "shape": [16, 32], "dtype": "float32"},
      {"id": "s", "op": "sum", "inputs": ["r"], "attrs": {"dims": [1]}, "shape": [16], "dtype": "float32"},
      {"id": "m", "op": "amax", "inputs": ["r"], "attrs": {"dims": [0]}, "shape": [32], "dtype": "float32"},
      {"id": "sm", "op": "softmax", "inputs": ["r"], "attrs": {"dim": 1}, "shape": [16, 32], "dtype": "float32"},
      {"id": "h", "op": "cast", "inputs": ["sm"], "attrs": {"dtype": "float16"}, "shape": [16, 32], "dtype": "float16"},
      {"id": "hr", "op": "sigmoid", "inputs": ["h"], "attrs": {}, "shape": [16, 32], "dtype": "float16"},
      {"id": "c", "op": "conv", "inputs": ["img", "cw", null],
       "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1},
       "shape": [2, 8, 16, 16], "dtype": "float32"}
    ],
    "outputs": ["s", "m", "hr", "c"]
  })");
  Program p = emit(g);
  auto dir = runtime_dir();
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  auto cuda = kernelbench_cuda_source(p, dir.value());
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().message();
  EXPECT_TRUE(export_kernelbench(g, p, kReference).is_ok());

  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto tmp = kforge::testing::temp_dir("export-kernelbench");
  ASSERT_TRUE(write_file(tmp / "cuda.cu", cuda.value()).is_ok());
  std::vector<std::string> compile = {tc->nvcc,
                                      "-c",
                                      "-std=c++17",
                                      "-O3",
                                      "-gencode",
                                      "arch=compute_90a,code=sm_90a",
                                      "-Xcompiler",
                                      "-fPIC",
                                      "--expt-relaxed-constexpr",
                                      "-D__CUDA_NO_HALF_OPERATORS__",
                                      "-D__CUDA_NO_HALF_CONVERSIONS__",
                                      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
                                      "-D__CUDA_NO_HALF2_OPERATORS__",
                                      "-U__CUDA_NO_HALF_OPERATORS__",
                                      "-U__CUDA_NO_HALF_CONVERSIONS__",
                                      "-U__CUDA_NO_HALF2_OPERATORS__",
                                      "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                                      "-o",
                                      (tmp / "cuda.o").string(),
                                      (tmp / "cuda.cu").string()};
  auto built = run_process(compile, {.timeout_seconds = 900});
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  ASSERT_TRUE(built->ok()) << built->output;

  std::vector<std::string> link = {tc->nvcc, "-shared", "-o", (tmp / "libmerged.so").string(),
                                   (tmp / "cuda.o").string()};
  for (const auto& lib : p.libraries) link.push_back("-l" + lib);
  auto linked = run_process(link, {.timeout_seconds = 300});
  ASSERT_TRUE(linked.is_ok()) << linked.status().message();
  ASSERT_TRUE(linked->ok()) << linked->output;

  auto defined = run_process({"nm", "-D", "--defined-only", (tmp / "libmerged.so").string()});
  auto undefined = run_process({"nm", "-D", "--undefined-only", (tmp / "libmerged.so").string()});
  ASSERT_TRUE(defined.is_ok() && undefined.is_ok());
  std::vector<std::string> symbols = {"kforge_forward", "kforge_last_error", "kforge_scratch_bytes", "kf_fail"};
  for (const auto& k : p.kernels) symbols.push_back(k.name);
  for (const auto& s : symbols) {
    EXPECT_TRUE(std::regex_search(defined->output, std::regex(" T " + s + "\n"))) << s << "\n" << defined->output;
    EXPECT_FALSE(has_word(undefined->output, s)) << s;
  }
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace kforge::codegen
