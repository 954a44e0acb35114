// scan_exclusive: cat([identity, cumsum(slice(x, 0 .. L - 2))]) along one dim as one exclusive scan
// kernel: where it is legal, the shifted writes and in-place reads it emits for row, chunked-row and
// column scans, and nvcc builds. The numerics against torch: on the GPU machine (level1/92).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "skills/planner.h"
#include "skills/scan_exclusive.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [rows, cols] -> slice(dim, start, cols - 1 along dim) -> s -> cumsum(dim) -> c; z = full(value) of
// size 1 along dim; y = cat([z, c] or [c, z], dim).
std::string exclusive_cumsum(int64_t rows, int64_t cols, int dim, double value = 0, int64_t start = 0,
                             bool zeros_first = true) {
  auto shape = [&](int64_t along) {
    return dim == 1 ? "[" + std::to_string(rows) + ", " + std::to_string(along) + "]"
                    : "[" + std::to_string(along) + ", " + std::to_string(cols) + "]";
  };
  const int64_t L = dim == 1 ? cols : rows;
  const int64_t n = L - 1 - start;
  const std::string cat_inputs = zeros_first ? R"(["z", "c"])" : R"(["c", "z"])";
  return R"({"format": "kforge.graph/1", "name": "exclusive_cumsum",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape(L) + R"(, "dtype": "float32"}], "params": [], "nodes": [
      {"id": "s", "op": "slice", "inputs": ["x"], "attrs": {"dim": )" +
         std::to_string(dim) + R"(, "start": )" + std::to_string(start) + R"(, "end": )" + std::to_string(L - 1) +
         R"(, "step": 1}, "shape": )" + shape(n) + R"(, "dtype": "float32"},
      {"id": "c", "op": "cumsum", "inputs": ["s"], "attrs": {"dim": )" +
         std::to_string(dim) + R"(}, "shape": )" + shape(n) + R"(, "dtype": "float32"},
      {"id": "z", "op": "full", "inputs": [], "attrs": {"shape": )" +
         shape(1) + R"(, "value": )" + std::to_string(value) + R"(, "dtype": "float32"}, "shape": )" + shape(1) +
         R"(, "dtype": "float32"},
      {"id": "y", "op": "cat", "inputs": )" +
         cat_inputs + R"(, "attrs": {"dim": )" + std::to_string(dim) + R"(}, "shape": )" + shape(n + 1) +
         R"(, "dtype": "float32"}],
    "outputs": ["y"]})";
}

TEST(ScanExclusive, SitesAndLegality) {
  ir::Graph g = graph_from_text(exclusive_cumsum(8, 1000, 1));
  auto first = schedule::plan_one_kernel_per_op(g, {});
  ASSERT_EQ(first.kernels.size(), 4u);
  auto sites = scan_exclusive_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1, 2, 3}));
  auto s = scan_exclusive(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_TRUE(is_scan_exclusive(g, s->kernels[0]));
  EXPECT_TRUE(scan_exclusive_sites(g, s.value()).empty());
  // A full of 1 before a cumsum, a slice from 1, the zeros after the scan: not an exclusive scan.
  for (const auto& text : {exclusive_cumsum(8, 1000, 1, 1.0), exclusive_cumsum(8, 1000, 1, 0, 1),
                           exclusive_cumsum(8, 1000, 1, 0, 0, false)}) {
    ir::Graph other = graph_from_text(text);
    EXPECT_TRUE(scan_exclusive_sites(other, schedule::plan_one_kernel_per_op(other, {})).empty());
  }
}

TEST(ScanExclusive, ShiftedWritesForEveryScanShapeAndItBuilds) {
  for (auto [rows, cols, dim, tag, a, b] :
       {std::tuple<int64_t, int64_t, int, const char*, const char*, const char*>{
            64, 3000, 1, "rows", "float* y = out + r * 3000LL + 1LL;",
            "if (c == 0 && threadIdx.x == 0) out[r * 3000LL] = (float)(double)0;"},
        {2, 200000, 1, "chunked", "const long long xb = r * 200000LL;", "float* y = out + r * 200000LL + 1LL;"},
        {3000, 64, 0, "columns", "const long long obase = o * 192000LL + (col - o * 64LL) + 64LL;",
         "if (chunk == 0) out[obase - 64LL] = (float)(double)0;"}}) {
    ir::Graph g = graph_from_text(exclusive_cumsum(rows, cols, dim));
    auto s = plan_default(g);
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    ASSERT_EQ(s->kernels.size(), 1u) << tag;
    auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const std::string& code = p->kernels[0].code;
    EXPECT_TRUE(has(code, a)) << tag << "\n" << code;
    EXPECT_TRUE(has(code, b)) << tag << "\n" << code;
    for (const char* v : {"s", "c", "z"})
      EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find(v))].storage, codegen::Storage::kRegister) << tag << v;
    kforge::testing::expect_builds_with_nvcc(p.value(), std::string("scan-exclusive-") + tag);
  }
}

}  // namespace
}  // namespace kforge::skills
